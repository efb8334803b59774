package cmp_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/internal/gittest"
)

// TestGenerateIndependentOfRevision plays Argo CD's repo-server on a real Git
// repository: a commit that touches only files outside the app (another
// environment, a README) must give byte-identical output, with and without
// the cache, or every commit anywhere in the repository makes every app
// OutOfSync (and an auto-synced one bumps its Acceptance, flaps its health
// and notifies "deployed" for a commit that changed nothing of it).
func TestGenerateIndependentOfRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	files := repoFiles("r.example.test/web:1@" + digest)
	files["apps/web/overlays/production/kustomization.yaml"] = "namespace: web-production\nresources: [../../base]\n"
	work := t.TempDir()
	gittest.Init(t, work)
	gittest.Commit(t, work, "base", files)
	repo, err := gitrepo.Open(ctx, work)
	if err != nil {
		t.Fatal(err)
	}
	first, err := repo.Resolve(ctx, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	second, err := repo.Commit(ctx, first, map[string][]byte{
		"apps/web/overlays/production/kustomization.yaml": []byte("namespace: web-production\nresources: [../../base]\nreplicas: [{name: web, count: 5}]\n"),
		"README.md": []byte("a commit that changes nothing of staging\n"),
	}, "production only")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		cache bool
	}{{"no cache", false}, {"cache", true}} {
		t.Run(c.name, func(t *testing.T) {
			var cache *cmp.Cache
			if c.cache {
				cache = &cmp.Cache{Dir: t.TempDir()}
			}
			var outs [][]byte
			for _, rev := range []string{first, second} {
				// Argo CD streams every revision into a fresh directory.
				root, err := repo.Export(ctx, rev, filepath.Join(t.TempDir(), "src"))
				if err != nil {
					t.Fatal(err)
				}
				res, err := generateApp(t, root, rev, cache)
				if err != nil {
					t.Fatalf("generate at %s: %v", rev, err)
				}
				if bytes.Contains(res.Manifests, []byte(rev)) {
					t.Errorf("the output at %s names the revision:\n%s", rev, res.Manifests)
				}
				outs = append(outs, res.Manifests)
			}
			if !bytes.Equal(outs[0], outs[1]) {
				t.Errorf("a commit outside the app changed its render:\n%s\n--- at %s ---\n%s", outs[0], second, outs[1])
			}
		})
	}
	// The app's own change still re-renders (the cache key is the content,
	// not the revision).
	third, err := repo.Commit(ctx, second, map[string][]byte{
		"apps/web/overlays/staging/kustomization.yaml": []byte(strings.Replace(files["apps/web/overlays/staging/kustomization.yaml"], "count: 2", "count: 3", 1)),
	}, "staging scales")
	if err != nil {
		t.Fatal(err)
	}
	cache := &cmp.Cache{Dir: t.TempDir()}
	var hashes []string
	for _, rev := range []string{second, third} {
		root, err := repo.Export(ctx, rev, filepath.Join(t.TempDir(), "src"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := generateApp(t, root, rev, cache)
		if err != nil {
			t.Fatalf("generate at %s: %v", rev, err)
		}
		hashes = append(hashes, res.Acceptance.Spec.RenderedHash)
	}
	if hashes[0] == hashes[1] {
		t.Errorf("the app's own change was not re-rendered: %s at both %s and %s", hashes[0], second, third)
	}
}
