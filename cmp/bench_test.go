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
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/internal/benchfixture"
)

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
	for _, n := range benchfixture.Sizes() {
		b.Run(fmt.Sprintf("deployments=%d", n), func(b *testing.B) {
			first := b.TempDir()
			app := benchfixture.WriteOverlay(b, first, n)
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
				start := benchfixture.CPUNow()
				for b.Loop() {
					generate(b, opts(first, app, "rev-1", nil), false)
				}
				benchfixture.ReportCPU(b, start)
			})

			if n <= 20 || os.Getenv(benchfixture.EnvLarge) != "" {
				b.Run("cache=miss", func(b *testing.B) {
					caches := b.TempDir()
					b.ReportAllocs()
					start := benchfixture.CPUNow()
					for i := 0; b.Loop(); i++ {
						c := &cmp.Cache{Dir: filepath.Join(caches, fmt.Sprint(i))}
						generate(b, opts(first, app, "rev-1", c), false)
					}
					benchfixture.ReportCPU(b, start)
				})
			}

			b.Run("cache=warm", func(b *testing.B) {
				// Fill the cache from the first commit once (-count reruns
				// this function), then serve the second commit from it.
				if !filled {
					cold := generate(b, opts(first, app, "rev-1", cache), false)
					warm := generate(b, opts(second, app, "rev-2", cache), true)
					if warm.Acceptance.Spec.RenderedHash != cold.Acceptance.Spec.RenderedHash ||
						!bytes.Equal(warm.Manifests, cold.Manifests) {
						b.Fatalf("warm render (another commit) differs from the cold one: hash %s vs %s, %d vs %d bytes",
							warm.Acceptance.Spec.RenderedHash, cold.Acceptance.Spec.RenderedHash,
							len(warm.Manifests), len(cold.Manifests))
					}
					filled = true
				}
				o := opts(second, app, "rev-2", cache)
				b.ReportAllocs()
				start := benchfixture.CPUNow()
				for b.Loop() {
					generate(b, o, true)
				}
				benchfixture.ReportCPU(b, start)
			})
		})
	}
}
