package render_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/throughline-dev/throughline/render"
)

// BenchmarkChartApp200Templates renders, in process with Helm's SDK, a
// chart app of 200 templates (a Deployment each, through a helper and the
// values), the figure to compare with `helm template` of the same
// chart (docs/benchmarks.md).
func BenchmarkChartApp200Templates(b *testing.B) {
	root := b.TempDir()
	write := func(name, body string) {
		p := filepath.Join(root, "app", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("Chart.yaml", "apiVersion: v2\nname: big\nversion: 1.0.0\n")
	write("values.yaml", "replicas: 2\nimage: registry.example.test/app@sha256:"+fmt.Sprintf("%064d", 0)+"\n")
	write("templates/_helpers.tpl", "{{- define \"big.labels\" -}}\napp.kubernetes.io/instance: {{ .Release.Name }}\n{{- end -}}\n")
	for i := range 200 {
		write(fmt.Sprintf("templates/d%03d.yaml", i), fmt.Sprintf(`apiVersion: apps/v1
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
`, i, i, i))
	}
	b.ResetTimer()
	for b.Loop() {
		app, err := render.Open(context.Background(), render.Options{Root: root, Path: "app"})
		if err != nil {
			b.Fatal(err)
		}
		objs, err := app.Build(context.Background())
		if err != nil || len(objs) != 200 {
			b.Fatalf("%d objects, %v", len(objs), err)
		}
	}
}
