package render_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/hostile"
	"github.com/throughline-dev/throughline/render"
)

// FuzzKustomization feeds generated kustomizations to the render: a
// resource, a patch file and an env file whose content is fuzzed (anchors,
// aliases, Secrets), and a kustomization that lists them in a fuzzed
// arrangement of fields (resources, patches, patchesStrategicMerge,
// generators, configurations, crds, inline patches). The render must not
// panic, must end as invalid input or succeed, and must never put the
// Secret value it was given into an error.
func FuzzKustomization(f *testing.F) {
	const secret = "hunter2-plaintext-fuzz"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n"
	sec := "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: " + secret + ", password: " + secret + "}\n"
	for _, seed := range []struct {
		layout                uint8
		resource, patch, envs string
	}{
		{0, cm, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {c: d}\n", "K=V\n"},
		{1, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\nbomb:\n" + indent(hostile.AliasBomb(9, 7)), cm, "K=" + secret + "\n"},
		{2, sec, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: [" + secret + "]\n", "password=" + secret + "\n"},
		{3, cm, "- {op: test, path: /data/a, value: x}\n", hostile.AliasBomb(3, 3)},
		{4, "a: &a [*a]\n", "<<: *b\n", "\x00"},
		{5, sec + "---\n" + sec, hostile.AliasBomb(9, 4), "password"},
		{6, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: &l {a: b}\n  annotations: *l\n", cm, ""},
		{7, strings.Repeat("[", 600) + strings.Repeat("]", 600), cm, ""},
	} {
		f.Add(seed.layout, seed.resource, seed.patch, seed.envs)
	}
	layouts := []string{
		"resources: [r.yaml]\npatches: [{path: p.yaml}]\n",
		"resources: [r.yaml]\npatchesStrategicMerge: [p.yaml]\n",
		"resources: [r.yaml]\nsecretGenerator: [{name: g, envs: [e.env], literals: [x=" + secret + "]}]\n",
		"resources: [r.yaml]\npatches: [{path: p.yaml, target: {kind: ConfigMap}}]\nconfigMapGenerator: [{name: g, files: [e.env]}]\n",
		"resources: [r.yaml]\nconfigurations: [p.yaml]\ncrds: [e.env]\n",
		"resources: [r.yaml, p.yaml]\n",
		"resources: [r.yaml]\ntransformers: [p.yaml]\n",
		"resources: [r.yaml]\nreplacements: [{path: p.yaml}]\nopenapi: {path: e.env}\n",
	}
	f.Fuzz(func(t *testing.T, layout uint8, resource, patch, envs string) {
		k := layouts[int(layout)%len(layouts)]
		if layout >= 128 {
			// The patch inline, as a string in the kustomization.
			k = "resources: [r.yaml]\npatches:\n- patch: |-\n" + indent(indent(patch))
		}
		root := writeTree(t, map[string]string{
			"app/kustomization.yaml": k, "app/r.yaml": resource, "app/p.yaml": patch, "app/e.env": envs,
		})
		ctx := context.Background()
		app, err := render.Open(ctx, render.Options{Root: root, Path: "app"})
		if err == nil {
			_, err = app.Build(ctx)
		}
		if err == nil {
			return
		}
		if !errors.Is(err, exitcode.ErrInvalid) {
			t.Fatalf("error is not an invalid-input error: %T %v", err, err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("the error holds the Secret value: %v", err)
		}
	})
}
