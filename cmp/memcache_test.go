package cmp

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/throughline-dev/throughline/render"
)

// TestMemoryCache: with InMemory, an entry this process stored is served
// from memory, without re-reading the disk (an edit of the disk entry is
// not seen, and not needed); an entry loaded from disk is verified once
// (an edited one is refused, as without InMemory) and then served from
// memory; an input change is still a miss.
func TestMemoryCache(t *testing.T) {
	pinned := "r.example.test/web:1@" + cacheTestDigest
	root := cacheTestRepo(t, pinned)
	dir := t.TempDir()
	resident := &Cache{Dir: dir, InMemory: true}
	first := cacheTestGenerate(t, root, resident)
	if first.CacheHit {
		t.Fatal("first render was a hit")
	}
	if n, b := resident.MemoryStats(); n != 1 || b <= 0 {
		t.Fatalf("memory holds %d entries, %d bytes after one store; want 1", n, b)
	}
	// Edit the disk entry: the resident process never reads it again.
	for _, p := range cacheFiles(t, dir, ".yaml") {
		if err := os.WriteFile(p, []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	next := cacheTestRepo(t, pinned) // a new commit: a fresh copy
	hit := cacheTestGenerate(t, next, resident)
	if !hit.CacheHit || hit.CacheErr != nil || !bytes.Equal(hit.Manifests, first.Manifests) {
		t.Fatalf("memory hit: hit %v, err %v, same manifests %v", hit.CacheHit, hit.CacheErr, bytes.Equal(hit.Manifests, first.Manifests))
	}
	// A new process over the same directory verifies the disk entry: the
	// edited one is refused and replaced by a fresh render.
	fresh := &Cache{Dir: dir, InMemory: true}
	res := cacheTestGenerate(t, next, fresh)
	if res.CacheHit || res.CacheErr == nil || !strings.Contains(res.CacheErr.Error(), "integrity") {
		t.Fatalf("edited disk entry: hit %v, err %v; want a miss with the integrity warning", res.CacheHit, res.CacheErr)
	}
	// Loaded from disk once (verified), then from memory with the disk gone.
	loader := &Cache{Dir: dir, InMemory: true}
	if res := cacheTestGenerate(t, next, loader); !res.CacheHit || res.CacheErr != nil {
		t.Fatalf("load from disk: hit %v, err %v", res.CacheHit, res.CacheErr)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if res := cacheTestGenerate(t, next, loader); !res.CacheHit {
		t.Fatal("an entry verified from disk was not kept in memory")
	}
	// An input change is a miss, in memory too.
	changed := cacheTestRepo(t, "r.example.test/web:2@"+cacheTestDigest)
	if res := cacheTestGenerate(t, changed, loader); res.CacheHit {
		t.Fatal("a changed image was served from memory")
	}
}

// TestMemoryCacheBounds: the memory layer keeps MaxPerApp entries per app
// and evicts the least recently used beyond MaxBytes.
func TestMemoryCacheBounds(t *testing.T) {
	var m memory
	entry := func(path string, n int) *cacheEntry {
		e := &cacheEntry{Manifests: bytes.Repeat([]byte("x"), n)}
		e.Probes = append(e.Probes, probe(path))
		e.assembled = e.Manifests
		return e
	}
	for i := range 5 {
		m.add("a", entry(filepath.Join("p", string(rune('a'+i))), 100), 2, 1<<20)
	}
	if n, _ := m.stats(); n != 2 {
		t.Errorf("%d entries of one app with MaxPerApp 2", n)
	}
	m.add("b", entry("q", 1000), 2, 1500)
	m.add("c", entry("r", 1000), 2, 1500)
	if _, ok := m.byKey["b"]; ok {
		t.Error("the least recently used app was not evicted above MaxBytes")
	}
	if _, b := m.stats(); b > 1500 {
		t.Errorf("memory holds %d bytes, bound 1500", b)
	}
}

func probe(path string) render.Probe { return render.Probe{Op: "read", Path: path, Result: "x"} }

// TestMemoryCacheConcurrent: concurrent generates of one app and of
// another share the in-memory cache (go test -race), each served the
// bytes of a render of its own inputs.
func TestMemoryCacheConcurrent(t *testing.T) {
	pinned := "r.example.test/web:1@" + cacheTestDigest
	roots := []string{cacheTestRepo(t, pinned), cacheTestRepo(t, "r.example.test/web:2@"+cacheTestDigest)}
	c := &Cache{Dir: t.TempDir(), InMemory: true}
	want := []*Result{cacheTestGenerate(t, roots[0], &Cache{Dir: t.TempDir()}), cacheTestGenerate(t, roots[1], &Cache{Dir: t.TempDir()})}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 4 {
				k := (g + i) % 2
				res, err := Generate(context.Background(), Options{
					WorkDir: filepath.Join(roots[k], cacheTestApp),
					Env: EnvFromEnviron([]string{
						"ARGOCD_APP_NAME=web-staging", "ARGOCD_APP_NAMESPACE=web-staging", "ARGOCD_APP_REVISION=rev",
						"ARGOCD_APP_SOURCE_PATH=" + cacheTestApp, "ARGOCD_ENV_ENVIRONMENT=staging",
					}),
					Version: "v0.0.0-test",
					Cache:   c,
				})
				if err != nil {
					errs <- err.Error()
					continue
				}
				if !bytes.Equal(res.Manifests, want[k].Manifests) {
					errs <- "served the render of other inputs"
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n, _ := c.MemoryStats(); n != 2 {
		t.Errorf("memory holds %d entries, want one per image", n)
	}
}

// TestMemoryCacheHostileCheckout: an in-memory entry (its replay plan
// compiled once) is not served to a new checkout whose input differs in
// content only (same size, same mtime) or whose input file was swapped
// for a symbolic link to a copy of the same content, inside or outside
// the repository.
func TestMemoryCacheHostileCheckout(t *testing.T) {
	pinned := "r.example.test/web:1@" + cacheTestDigest
	deploy := filepath.FromSlash("apps/web/base/deploy.yaml")
	first := cacheTestRepo(t, pinned)
	c := &Cache{Dir: t.TempDir(), InMemory: true}
	stored := cacheTestGenerate(t, first, c)
	if stored.CacheHit {
		t.Fatal("the first render was a hit")
	}
	orig, err := os.Stat(filepath.Join(first, deploy))
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join(first, deploy))
	if err != nil {
		t.Fatal(err)
	}
	swap := func(t *testing.T, root, target string) {
		t.Helper()
		if err := os.WriteFile(target, body, 0o644); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, deploy)
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		edit func(t *testing.T, root string)
	}{
		{"same size and mtime, another image", func(t *testing.T, root string) {
			p := filepath.Join(root, deploy)
			changed := strings.Replace(string(body), "web:1@", "web:2@", 1)
			if len(changed) != len(body) || changed == string(body) {
				t.Fatal("the edit must keep the size")
			}
			if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(p, orig.ModTime(), orig.ModTime()); err != nil {
				t.Fatal(err)
			}
		}},
		{"swapped for a symlink to a copy inside the repository", func(t *testing.T, root string) {
			swap(t, root, filepath.Join(root, "apps", "web", "base", "copy.yaml"))
		}},
		{"swapped for a symlink to a copy outside the repository", func(t *testing.T, root string) {
			swap(t, root, filepath.Join(t.TempDir(), "deploy.yaml"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := cacheTestRepo(t, pinned) // a new commit: a fresh copy
			if hit := cacheTestGenerate(t, root, c); !hit.CacheHit {
				t.Fatal("an unchanged checkout missed")
			}
			root = cacheTestRepo(t, pinned)
			tt.edit(t, root)
			res, err := Generate(context.Background(), Options{
				WorkDir: filepath.Join(root, cacheTestApp),
				Env: EnvFromEnviron([]string{
					"ARGOCD_APP_NAME=web-staging", "ARGOCD_APP_NAMESPACE=web-staging", "ARGOCD_APP_REVISION=rev",
					"ARGOCD_APP_SOURCE_PATH=" + cacheTestApp, "ARGOCD_ENV_ENVIRONMENT=staging",
				}),
				Version: "v0.0.0-test",
				Cache:   c,
			})
			if err == nil && res.CacheHit {
				t.Fatal("served from memory")
			}
		})
	}
}
