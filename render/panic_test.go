package render_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// A kustomization that makes kustomize panic (an openapi schema that is
// not a schema, with a resource that has no apiVersion) is invalid input, and the renders after it in the same
// process (promote check, serve, the fuzzer) still run: the panic used to
// leave the lock that serializes krusty held, and every later render hung.
func TestRenderAfterAKustomizePanic(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"bad/kustomization.yaml": "resources: [r.yaml]\nreplacements: [{path: p.yaml}]\nopenapi: {path: e.env}\n",
		"bad/r.yaml":             "aiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n",
		"bad/p.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {c: d}\n",
		"bad/e.env":              "K=V\n",
		"ok/kustomization.yaml":  "resources: [r.yaml]\n",
		"ok/r.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n",
	})
	build := func(dir string) error {
		ctx := context.Background()
		app, err := render.Open(ctx, render.Options{Root: root, Path: dir})
		if err != nil {
			return err
		}
		_, err = app.Build(ctx)
		return err
	}
	if err := build("bad"); !errors.Is(err, exitcode.ErrInvalid) {
		t.Fatalf("the panicking kustomization: %v, want invalid input", err)
	}
	done := make(chan error, 1)
	go func() { done <- build("ok") }()
	// Not a timing assertion: a render that never returns is the bug; one
	// minute is far beyond any render of two objects.
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the render after the panic: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the render after a kustomize panic never returned: the krusty lock is still held")
	}
}
