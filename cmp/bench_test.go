//go:build unix

package cmp_test

// Benchmarks of the Argo CD plugin's generate: cold (no cache), miss (cache
// on, empty: render + trace + store) and warm (a new commit elsewhere in the
// repository: the repository is copied to a new directory, as Argo CD
// streams it, with an unrelated file changed, and the render is served from
// the cache). Target: warm <= 50 ms. Run with `make bench`; figures in
// docs/benchmarks.md. The 2,000-Deployment app runs only with
// THROUGHLINE_BENCH_LARGE=1 (its cold render takes krusty 10-16 s):
//
//	THROUGHLINE_BENCH_LARGE=1 go test -run '^$' -bench 'Generate/deployments=2000' \
//	  -benchmem -benchtime 1x -count 6 ./cmp/

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/cmp"
)

const envBenchLarge = "THROUGHLINE_BENCH_LARGE"

var benchImages = []string{
	"registry.example.test/bench/api",
	"registry.example.test/bench/worker",
	"registry.example.test/bench/migrate",
	"registry.example.test/bench/proxy",
}

func benchDigest(i int) string {
	return "sha256:" + strings.Repeat(fmt.Sprintf("%02x", 0xa0+i), 32)
}

func benchSizes() []int {
	if os.Getenv(envBenchLarge) != "" {
		return []int{20, 500, 2000}
	}
	return []int{20, 500}
}

// writeOverlayTree writes the benchmark repository of render/bench_test.go
// (kept identical by hand; hack/bench-cli.sh writes the same tree): a base
// of n Deployments, one file each, and an overlay with namespace:, images:
// pinning by digest and a patch of every Deployment. Plus an unrelated
// README.md and another app. It returns the overlay path relative to root.
func writeOverlayTree(tb testing.TB, root string, n int) string {
	tb.Helper()
	base := filepath.Join(root, "apps", "bench", "base")
	overlay := filepath.Join(root, "apps", "bench", "overlays", "production")
	other := filepath.Join(root, "apps", "other")
	for _, d := range []string{base, overlay, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	write(filepath.Join(root, "README.md"), "# bench repository\n")
	write(filepath.Join(other, "configmap.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {revision: \"1\"}\n")
	var k strings.Builder
	k.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	for i := range n {
		name := fmt.Sprintf("deploy-%04d.yaml", i)
		fmt.Fprintf(&k, "  - %s\n", name)
		write(filepath.Join(base, name), fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: svc-%04d
  labels:
    app.kubernetes.io/name: svc-%04d
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: svc-%04d
  template:
    metadata:
      labels:
        app.kubernetes.io/name: svc-%04d
    spec:
      initContainers:
        - name: migrate
          image: %s
          args: ["migrate", "--check"]
      containers:
        - name: app
          image: %s
          ports:
            - name: http
              containerPort: 8080
          resources:
            requests: {cpu: 100m, memory: 128Mi}
            limits: {memory: 256Mi}
          readinessProbe:
            httpGet: {path: /healthz, port: http}
`, i, i, i, i, benchImages[2], benchImages[i%2]))
	}
	write(filepath.Join(base, "kustomization.yaml"), k.String())

	var o strings.Builder
	o.WriteString(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: bench-production
resources:
  - ../../base
patches:
  - path: environment.yaml
    target:
      kind: Deployment
images:
`)
	for i, im := range benchImages {
		fmt.Fprintf(&o, "  - name: %s\n    newTag: \"1.4.%d@%s\"\n", im, i, benchDigest(i))
	}
	write(filepath.Join(overlay, "kustomization.yaml"), o.String())
	write(filepath.Join(overlay, "environment.yaml"), `apiVersion: apps/v1
kind: Deployment
metadata:
  name: any
spec:
  template:
    spec:
      containers:
        - name: app
          env:
            - name: ENVIRONMENT
              value: production
`)
	return filepath.ToSlash(filepath.Join("apps", "bench", "overlays", "production"))
}

// copyTree copies the regular files and directories of src into dst, like
// Argo CD streaming a new commit into a fresh directory.
func copyTree(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func opts(root, app, revision string, cache *cmp.Cache) cmp.Options {
	return cmp.Options{
		WorkDir: filepath.Join(root, filepath.FromSlash(app)),
		Env: cmp.Env{
			AppName:    "bench-production",
			SourcePath: app,
			Revision:   revision,
			RepoURL:    "https://git.example.test/bench.git",
			Params:     map[string]string{},
		},
		Version: "bench",
		Cache:   cache,
	}
}

func generate(b *testing.B, o cmp.Options, wantHit bool) *cmp.Result {
	res, err := cmp.Generate(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	if res.CacheHit != wantHit {
		b.Fatalf("cache hit %v, want %v", res.CacheHit, wantHit)
	}
	if res.CacheErr != nil {
		b.Fatal(res.CacheErr)
	}
	return res
}

// BenchmarkGenerate measures cmp.Generate on the benchmark overlay. The
// cache=miss case (render + trace + store) runs for 20 Deployments, and for
// every size with THROUGHLINE_BENCH_LARGE=1.
func BenchmarkGenerate(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("deployments=%d", n), func(b *testing.B) {
			first := b.TempDir()
			app := writeOverlayTree(b, first, n)
			// The next commit: a fresh copy of the repository with an
			// unrelated file changed.
			second := b.TempDir()
			copyTree(b, first, second)
			if err := os.WriteFile(filepath.Join(second, "apps", "other", "configmap.yaml"),
				[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {revision: \"2\"}\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			cache := &cmp.Cache{Dir: b.TempDir()}
			filled := false

			b.Run("cache=cold", func(b *testing.B) {
				b.ReportAllocs()
				start := cpuNow()
				for b.Loop() {
					generate(b, opts(first, app, "rev-1", nil), false)
				}
				reportCPU(b, start)
			})

			if n <= 20 || os.Getenv(envBenchLarge) != "" {
				b.Run("cache=miss", func(b *testing.B) {
					caches := b.TempDir()
					b.ReportAllocs()
					start := cpuNow()
					for i := 0; b.Loop(); i++ {
						c := &cmp.Cache{Dir: filepath.Join(caches, fmt.Sprint(i))}
						generate(b, opts(first, app, "rev-1", c), false)
					}
					reportCPU(b, start)
				})
			}

			b.Run("cache=warm", func(b *testing.B) {
				// Fill the cache from the first commit once (-count reruns
				// this function), then serve the second commit from it.
				if !filled {
					cold := generate(b, opts(first, app, "rev-1", cache), false)
					warm := generate(b, opts(second, app, "rev-2", cache), true)
					if warm.Acceptance.Spec.RenderedHash != cold.Acceptance.Spec.RenderedHash ||
						warm.Acceptance.Spec.SourceRevision != "rev-2" ||
						len(warm.Manifests) != len(cold.Manifests) {
						b.Fatalf("warm render differs from the cold one: hash %s vs %s, revision %q, %d vs %d bytes",
							warm.Acceptance.Spec.RenderedHash, cold.Acceptance.Spec.RenderedHash,
							warm.Acceptance.Spec.SourceRevision, len(warm.Manifests), len(cold.Manifests))
					}
					filled = true
				}
				o := opts(second, app, "rev-2", cache)
				b.ReportAllocs()
				start := cpuNow()
				for b.Loop() {
					generate(b, o, true)
				}
				reportCPU(b, start)
			})
		})
	}
}

// cpuNow is the CPU time (user + system, every thread) the process has used.
// On a shared machine wall time includes waiting for a core; cpu-ns/op does
// not, so it is reported next to ns/op (see docs/benchmarks.md).
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time used since start per iteration.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuNow()-start)/float64(b.N), "cpu-ns/op")
}
