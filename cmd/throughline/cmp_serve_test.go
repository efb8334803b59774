package main

import (
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"

	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/cmp/resident"
	"github.com/throughline-dev/throughline/internal/cli"
	"github.com/throughline-dev/throughline/internal/spantest"
	"github.com/throughline-dev/throughline/render"
)

// TestGenerateTrace: each render of the resident renderer is a cmp.generate
// span naming the app, the exit code, whether the cache answered, the
// rendered hash and the object count (a render through the real render
// child, then a hit from memory), a refusal is an error span, and no
// attribute carries a value of the plugin's environment.
func TestGenerateTrace(t *testing.T) {
	render.UseWorker(&render.Worker{Args: []string{render.WorkerCommand}})
	t.Cleanup(func() { render.UseWorker(nil) })
	repo := copyTree(t, exampleRepo)
	r := &cli.Resident{Version: "test", MaxFileSize: render.DefaultMaxFileSize, Cache: &cmp.Cache{Dir: t.TempDir(), InMemory: true}}
	h := traceGenerate(r.Handle)
	const secret = "s3cr3t-token-value"
	req := resident.Request{
		Version: resident.ProtocolVersion, WorkDir: filepath.Join(repo, "apps/checkout/overlays/dev"),
		Environ: []string{"ARGOCD_APP_NAME=checkout", "ARGOCD_APP_SOURCE_PATH=apps/checkout/overlays/dev", "ARGOCD_ENV_TOKEN=" + secret},
	}
	for i, wantHit := range []bool{false, true} {
		ctx, trace := spantest.Root(t)
		res := h(ctx, req)
		if res == nil || res.Code != 0 {
			t.Fatalf("render %d: %+v", i, res)
		}
		spans := spantest.Of(trace)
		if len(spans) != 1 || spans[0].Name() != "cmp.generate" {
			t.Fatalf("render %d: spans %v", i, spans)
		}
		a := spantest.Attributes(spans[0])
		want := map[string]string{
			"throughline.app": "checkout", "throughline.code": "0", "throughline.cache_hit": map[bool]string{false: "false", true: "true"}[wantHit],
			"throughline.rendered_hash": res.RenderedHash,
		}
		for k, v := range want {
			if a[k] != v {
				t.Errorf("render %d: %s = %q, want %q", i, k, a[k], v)
			}
		}
		if a["throughline.objects"] == "" || a["throughline.objects"] == "0" || !strings.HasPrefix(res.RenderedHash, "sha256:") {
			t.Errorf("render %d: objects %q, hash %q", i, a["throughline.objects"], res.RenderedHash)
		}
		for k, v := range a {
			if strings.Contains(v, secret) {
				t.Errorf("attribute %s carries the environment's value", k)
			}
		}
	}
	ctx, trace := spantest.Root(t)
	req.Environ[1] = "ARGOCD_APP_SOURCE_PATH=apps/checkout/overlays/elsewhere"
	if res := h(ctx, req); res == nil || res.Code == 0 {
		t.Fatalf("a source path that is not the directory rendered: %+v", res)
	}
	spans := spantest.Of(trace)
	if len(spans) != 1 || spans[0].Status().Code != codes.Error || spantest.Attributes(spans[0])["throughline.code"] == "0" {
		t.Fatalf("refusal span: %v", spans)
	}
}
