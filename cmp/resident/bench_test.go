//go:build unix

package resident_test

// A warm hit through the resident renderer against the same hit
// in-process (what a plugin process does: a fresh Cache over the disk
// cache, the entry read and verified), for a new commit (a fresh copy of
// the repository with an unrelated change). Neither counts the plugin's
// process start. Figures in docs/benchmarks.md:
//
//	THROUGHLINE_BENCH_LARGE=1 go test -run '^$' -bench ResidentWarm -benchmem -count 5 ./cmp/resident/

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/cmp/resident"
	"github.com/throughline-dev/throughline/internal/benchfixture"
	"github.com/throughline-dev/throughline/internal/cli"
	"github.com/throughline-dev/throughline/render"
)

// benchRepo is one size's repository: two commits and a filled disk cache.
type benchRepo struct {
	second, app, cacheDir string
	environ               []string
}

var benchRepos = map[int]*benchRepo{} // kept across -count reruns

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
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func repoFor(b *testing.B, n int) *benchRepo {
	if r := benchRepos[n]; r != nil {
		return r
	}
	base, err := os.MkdirTemp("", "tlr-bench-")
	if err != nil {
		b.Fatal(err)
	}
	first, second := filepath.Join(base, "c1"), filepath.Join(base, "c2")
	app := benchfixture.WriteOverlay(b, first, n)
	copyTree(b, first, second)
	if err := os.WriteFile(filepath.Join(second, "apps", "other", "configmap.yaml"),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {revision: \"2\"}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	r := &benchRepo{second: second, app: app, cacheDir: filepath.Join(base, "cache"), environ: []string{
		"ARGOCD_APP_NAME=bench-production", "ARGOCD_APP_SOURCE_PATH=" + app, "ARGOCD_APP_SOURCE_REPO_URL=https://git.example.test/bench.git",
	}}
	if _, err := cmp.Generate(context.Background(), r.opts(first, &cmp.Cache{Dir: r.cacheDir})); err != nil {
		b.Fatal(err)
	}
	benchRepos[n] = r
	return r
}

func (r *benchRepo) opts(root string, c *cmp.Cache) cmp.Options {
	return cmp.Options{WorkDir: filepath.Join(root, filepath.FromSlash(r.app)), Env: cmp.EnvFromEnviron(r.environ),
		Version: "bench", Cache: c, MaxFileSize: render.DefaultMaxFileSize}
}

func BenchmarkResidentWarm(b *testing.B) {
	for _, n := range benchfixture.Sizes() {
		b.Run(fmt.Sprintf("deployments=%d", n), func(b *testing.B) {
			r := repoFor(b, n)
			b.Run("via=in-process", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					// A plugin process: a new Cache each time.
					res, err := cmp.Generate(context.Background(), r.opts(r.second, &cmp.Cache{Dir: r.cacheDir}))
					if err != nil || !res.CacheHit || res.CacheErr != nil {
						b.Fatalf("in-process: %v, hit %v, %v", err, res != nil && res.CacheHit, res.CacheErr)
					}
				}
			})
			b.Run("via=resident", func(b *testing.B) {
				dir, err := os.MkdirTemp("", "tlr-")
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = os.RemoveAll(dir) }()
				l, err := resident.Listen(context.Background(), dir)
				if err != nil {
					b.Fatal(err)
				}
				h := &cli.Resident{Version: "bench", MaxFileSize: render.DefaultMaxFileSize,
					Cache: &cmp.Cache{Dir: r.cacheDir, InMemory: true}}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); _ = (&resident.Server{Handler: h.Handle}).Serve(ctx, l) }()
				defer func() { cancel(); <-done }()
				c := &resident.Client{Dir: dir}
				req := resident.Request{WorkDir: filepath.Join(r.second, filepath.FromSlash(r.app)), Environ: r.environ}
				// The first request loads the entry from disk (verified once).
				if res, err := c.Generate(context.Background(), req); err != nil || !res.CacheHit {
					b.Fatalf("first resident request: %v", err)
				}
				b.ReportAllocs()
				for b.Loop() {
					res, err := c.Generate(context.Background(), req)
					if err != nil || res.Code != 0 || !res.CacheHit {
						b.Fatalf("resident: %v, %+v", err, res)
					}
				}
			})
		})
	}
}
