//go:build unix

package policy_test

// Benchmarks of policy and the rendered hash on pre-rendered objects (what
// Declare adds after krusty). Target: policy + hash on 2,000 objects
// <= 50 ms. Run with `make bench`; figures in docs/benchmarks.md.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/benchfixture"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
)

// renderedObjects decodes n Deployments shaped like the output of the
// benchmark overlay of render/bench_test.go (namespaced, an init container
// and a container each, every image pinned by digest, patched env).
func renderedObjects(tb testing.TB, n int) []render.Object {
	tb.Helper()
	var s strings.Builder
	for i := range n {
		fmt.Fprintf(&s, `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: svc-%04d
  namespace: bench-production
  labels: {app.kubernetes.io/name: svc-%04d}
spec:
  replicas: 2
  selector:
    matchLabels: {app.kubernetes.io/name: svc-%04d}
  template:
    metadata:
      labels: {app.kubernetes.io/name: svc-%04d}
    spec:
      initContainers:
        - name: migrate
          image: %s:1.4.2@%s
          args: ["migrate", "--check"]
      containers:
        - name: app
          image: %s:1.4.%d@%s
          env: [{name: ENVIRONMENT, value: production}]
          ports: [{name: http, containerPort: 8080}]
          resources:
            requests: {cpu: 100m, memory: 128Mi}
            limits: {memory: 256Mi}
          readinessProbe:
            httpGet: {path: /healthz, port: http}
`, i, i, i, i, benchfixture.Images[2], benchfixture.Digest(2), benchfixture.Images[i%2], i%2, benchfixture.Digest(i%2))
	}
	objs, err := render.DecodeManifests([]byte(s.String()), "bench.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	if len(objs) != n {
		tb.Fatalf("decoded %d objects, want %d", len(objs), n)
	}
	return objs
}

// BenchmarkPolicyHash runs policy.CheckObjects, render.Hash and both (the
// target) on pre-rendered objects.
func BenchmarkPolicyHash(b *testing.B) {
	for _, n := range []int{500, 2000} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			objs := renderedObjects(b, n)
			check := func() {
				res := policy.CheckObjects(objs, nil, "")
				if len(res.Violations) != 0 || len(res.Containers) != 2*n {
					b.Fatalf("%d violations, %d containers; want 0, %d", len(res.Violations), len(res.Containers), 2*n)
				}
			}
			hash := func() {
				if _, err := render.Hash(objs); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("step=check", func(b *testing.B) {
				b.ReportAllocs()
				start := benchfixture.CPUNow()
				for b.Loop() {
					check()
				}
				benchfixture.ReportCPU(b, start)
			})
			b.Run("step=hash", func(b *testing.B) {
				b.ReportAllocs()
				start := benchfixture.CPUNow()
				for b.Loop() {
					hash()
				}
				benchfixture.ReportCPU(b, start)
			})
			b.Run("step=check+hash", func(b *testing.B) {
				b.ReportAllocs()
				start := benchfixture.CPUNow()
				for b.Loop() {
					check()
					hash()
				}
				benchfixture.ReportCPU(b, start)
			})
		})
	}
}

// BenchmarkCheckImage is the pin rule on one image reference.
func BenchmarkCheckImage(b *testing.B) {
	ref := benchfixture.Images[0] + ":1.4.0@" + benchfixture.Digest(0)
	b.ReportAllocs()
	start := benchfixture.CPUNow()
	for b.Loop() {
		if _, err := policy.CheckImage(ref); err != nil {
			b.Fatal(err)
		}
	}
	benchfixture.ReportCPU(b, start)
}
