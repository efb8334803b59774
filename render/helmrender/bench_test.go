package helmrender_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	cutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"

	"github.com/throughline-dev/throughline/internal/benchfixture"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/render/helmrender"
)

// chart200 writes a chart of 200 templates (a Deployment each, through a
// helper and the values) in dir/app, the chart of hack/bench-helm.sh.
func chart200(b *testing.B, dir string) string {
	b.Helper()
	app := filepath.Join(dir, "app")
	files := map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: big\nversion: 1.0.0\n",
		"values.yaml":            "replicas: 2\nimage: registry.example.test/app@sha256:" + strings.Repeat("0", 64) + "\n",
		"templates/_helpers.tpl": "{{- define \"big.labels\" -}}\napp.kubernetes.io/instance: {{ .Release.Name }}\n{{- end -}}\n",
	}
	for i := range 200 {
		files[fmt.Sprintf("templates/d%03d.yaml", i)] = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-%03d
  labels:
    {{- include "big.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: d%03d}
  template:
    metadata:
      labels: {app: d%03d}
    spec:
      containers:
        - name: app
          image: {{ .Values.image | quote }}
`, i, i, i)
	}
	for name, body := range files {
		p := filepath.Join(app, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return app
}

// BenchmarkChart200 is issue 18's in-process figure: a chart app of 200
// templates rendered by throughline (impl=throughline: render.Open and
// Build, reading the files through the confined file system, Helm's engine,
// decoding every object; no policy, no hash) against Helm's own SDK doing
// what `helm template` does (impl=helm-sdk: loader.LoadDir and a client-only
// dry-run install). docs/benchmarks.md has the figures.
func BenchmarkChart200(b *testing.B) {
	render.UseHelm(helmrender.Engine{})
	defer render.UseHelm(nil)
	root := b.TempDir()
	app := chart200(b, root)
	ctx := context.Background()
	b.Run("impl=throughline", func(b *testing.B) {
		b.ReportAllocs()
		start := benchfixture.CPUNow()
		for b.Loop() {
			a, err := render.Open(ctx, render.Options{Root: root, Path: "app"})
			if err != nil {
				b.Fatal(err)
			}
			objs, err := a.Build(ctx)
			if err != nil || len(objs) != 200 {
				b.Fatalf("%d objects, %v", len(objs), err)
			}
		}
		benchfixture.ReportCPU(b, start)
	})
	b.Run("impl=helm-sdk", func(b *testing.B) {
		b.ReportAllocs()
		start := benchfixture.CPUNow()
		for b.Loop() {
			if n := helmTemplate(b, app); n != 200 {
				b.Fatalf("%d manifests, want 200", n)
			}
		}
		benchfixture.ReportCPU(b, start)
	})
}

// helmTemplate is the rendering of `helm template` with Helm's SDK, as
// action.Install's client-only dry run does it (action's own package needs
// modules this one does not link): load the chart from disk, process its
// dependencies, coalesce and validate the values, render, sort the
// manifests in install order. It returns the number of manifests.
func helmTemplate(b *testing.B, dir string) int {
	chrt, err := loader.LoadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	if err := chartutil.ProcessDependencies(chrt, map[string]any{}); err != nil {
		b.Fatal(err)
	}
	opts := common.ReleaseOptions{Name: "big", Namespace: "big", Revision: 1, IsInstall: true}
	vals, err := cutil.ToRenderValuesWithSchemaValidation(chrt, map[string]any{}, opts, common.DefaultCapabilities.Copy(), false)
	if err != nil {
		b.Fatal(err)
	}
	files, err := engine.Engine{}.RenderWithContext(context.Background(), chrt, vals)
	if err != nil {
		b.Fatal(err)
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		b.Fatal(err)
	}
	return len(manifests)
}
