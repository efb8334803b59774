package cmp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/render"
)

const cacheTestDigest = "sha256:9c2f1e0d7b6a5f4e3d2c1b0a99887766554433221100ffeeddccbbaa98765432"

const cacheTestApp = "apps/web/overlays/staging"

// cacheTestRepo writes a one-Deployment app whose image is image.
func cacheTestRepo(t *testing.T, image string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"apps/web/base/kustomization.yaml": "resources: [deploy.yaml]\n",
		"apps/web/base/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "` + image + `"}]
`,
		cacheTestApp + "/kustomization.yaml": "namespace: web-staging\nresources: [../../base]\n",
		cacheTestApp + "/.throughline":       "",
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func cacheTestGenerate(t *testing.T, root string, c *Cache) *Result {
	t.Helper()
	res, err := Generate(context.Background(), Options{
		WorkDir: filepath.Join(root, cacheTestApp),
		Env: EnvFromEnviron([]string{
			"ARGOCD_APP_NAME=web-staging", "ARGOCD_APP_NAMESPACE=web-staging", "ARGOCD_APP_REVISION=rev",
			"ARGOCD_APP_SOURCE_PATH=" + cacheTestApp, "ARGOCD_ENV_ENVIRONMENT=staging",
		}),
		Version: "v0.0.0-test",
		Cache:   c,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// cacheFiles returns the cache's files with the suffix.
func cacheFiles(t *testing.T, dir, suffix string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, suffix) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

const unpinned = "r.example.test/web:1.2"

// TestCacheEditedEntry edits a stored entry as anyone who can write the
// cache directory could: the edited render must never be served.
func TestCacheEditedEntry(t *testing.T) {
	t.Parallel()
	pinned := "r.example.test/web:1@" + cacheTestDigest
	tests := []struct {
		name string
		edit func(t *testing.T, c *Cache, key string, e *cacheEntry, manifests string)
		want string // in the warning
	}{
		{"manifests edited, the sum not", func(t *testing.T, c *Cache, _ string, _ *cacheEntry, _ string) {
			for _, p := range cacheFiles(t, c.Dir, ".yaml") {
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(data), pinned, unpinned)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}, "integrity"},
		{"entry forged with a valid sum: unpinned image", func(t *testing.T, c *Cache, key string, e *cacheEntry, manifests string) {
			e.Manifests = []byte(strings.ReplaceAll(manifests, pinned, unpinned))
			for i := range e.Acceptance.Spec.Workloads {
				for j := range e.Acceptance.Spec.Workloads[i].Containers {
					e.Acceptance.Spec.Workloads[i].Containers[j].Image = unpinned
					e.Acceptance.Spec.Workloads[i].Containers[j].Digest = ""
				}
			}
			if err := c.store(key, e); err != nil {
				t.Fatal(err)
			}
		}, "policy"},
		{"entry forged with a valid sum: other digest, same Acceptance", func(t *testing.T, c *Cache, key string, e *cacheEntry, manifests string) {
			e.Manifests = []byte(strings.ReplaceAll(manifests, cacheTestDigest, "sha256:"+strings.Repeat("e", 64)))
			if err := c.store(key, e); err != nil {
				t.Fatal(err)
			}
		}, "rendered hash"},
		{"entry forged with a valid sum: Acceptance names other images", func(t *testing.T, c *Cache, key string, e *cacheEntry, _ string) {
			e.Acceptance.Spec.Workloads[0].Containers[0].Digest = "sha256:" + strings.Repeat("e", 64)
			if err := c.store(key, e); err != nil {
				t.Fatal(err)
			}
		}, "workloads"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &Cache{Dir: filepath.Join(t.TempDir(), "cache")}
			root := cacheTestRepo(t, pinned)
			first := cacheTestGenerate(t, root, c)
			if first.CacheHit || first.CacheErr != nil {
				t.Fatalf("first render: hit=%v err=%v", first.CacheHit, first.CacheErr)
			}
			key := appKey("v0.0.0-test", "", EnvFromEnviron([]string{
				"ARGOCD_APP_NAME=web-staging", "ARGOCD_APP_NAMESPACE=web-staging",
				"ARGOCD_APP_SOURCE_PATH=" + cacheTestApp, "ARGOCD_ENV_ENVIRONMENT=staging",
			}))
			jsons := cacheFiles(t, c.Dir, ".json")
			yamls := cacheFiles(t, c.Dir, ".yaml")
			if len(jsons) != 1 || len(yamls) != 1 || !strings.Contains(jsons[0], key) {
				t.Fatalf("want one entry under key %s, got %v %v", key, jsons, yamls)
			}
			manifests, err := os.ReadFile(yamls[0])
			if err != nil {
				t.Fatal(err)
			}
			e := &cacheEntry{Renderer: "v0.0.0-test", Acceptance: first.Acceptance}
			e.Probes = storedProbes(t, jsons[0])
			e.Manifests = manifests
			tt.edit(t, c, key, e, string(manifests))

			second := cacheTestGenerate(t, cacheTestRepo(t, pinned), c)
			if strings.Contains(string(second.Manifests), unpinned) || strings.Contains(string(second.Manifests), strings.Repeat("e", 64)) {
				t.Fatalf("the edited entry was served (hit=%v):\n%s", second.CacheHit, second.Manifests)
			}
			if second.CacheHit || string(second.Manifests) != string(first.Manifests) {
				t.Errorf("want a fresh render equal to the first: hit=%v\n%s", second.CacheHit, second.Manifests)
			}
			if second.CacheErr == nil || !strings.Contains(second.CacheErr.Error(), tt.want) {
				t.Errorf("the ignored entry is not reported: %v, want %q", second.CacheErr, tt.want)
			}
			// The fresh render replaced the bad entry.
			third := cacheTestGenerate(t, cacheTestRepo(t, pinned), c)
			if !third.CacheHit || third.CacheErr != nil || string(third.Manifests) != string(first.Manifests) {
				t.Errorf("after the re-render: hit=%v err=%v", third.CacheHit, third.CacheErr)
			}
		})
	}
}

// storedProbes reads the probes of a stored entry.
func storedProbes(t *testing.T, file string) []render.Probe {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, body, ok := strings.Cut(string(data), "\n"); ok && data[0] != '{' {
		data = []byte(body) // after the sum line
	}
	var stored struct {
		Probes []render.Probe `json:"probes"`
		Entry  struct {
			Probes []render.Probe `json:"probes"`
		} `json:"entry"`
	}
	if err := json.Unmarshal(data, &stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Entry.Probes) > 0 {
		return stored.Entry.Probes
	}
	return stored.Probes
}

// TestCacheRefusesUnsafeDirectory: a cache directory that another user could
// have planted or can write is never read nor written; the render runs
// uncached and says why.
func TestCacheRefusesUnsafeDirectory(t *testing.T) {
	t.Parallel()
	pinned := "r.example.test/web:1@" + cacheTestDigest
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"symlink", func(t *testing.T, dir string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.Mkdir(target, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, dir); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
		{"world-writable", func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, "writable"},
		{"group-writable", func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o770); err != nil {
				t.Fatal(err)
			}
		}, "writable"},
		{"another user's", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a directory away")
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "owned by"},
		{"a file", func(t *testing.T, dir string) {
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a directory"},
		{"none configured", nil, "no render cache directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "cache")
			if tt.setup != nil {
				tt.setup(t, dir)
			} else {
				dir = ""
			}
			root := cacheTestRepo(t, pinned)
			for i := range 2 {
				res := cacheTestGenerate(t, root, &Cache{Dir: dir})
				if res.CacheHit || res.CacheErr == nil || !strings.Contains(res.CacheErr.Error(), tt.want) {
					t.Fatalf("render %d: hit=%v warning=%v, want an uncached render and a warning containing %q", i, res.CacheHit, res.CacheErr, tt.want)
				}
			}
			if dir == "" {
				return
			}
			if resolved, err := filepath.EvalSymlinks(dir); err == nil && isDir(resolved) {
				if files := cacheFiles(t, resolved, ""); len(files) > 0 {
					t.Errorf("the refused directory was written: %v", files)
				}
			}
		})
	}
}

// TestCacheCreatesPrivateDirectory: a missing cache directory is created
// 0700 (its parents too).
func TestCacheCreatesPrivateDirectory(t *testing.T) {
	t.Parallel()
	parent := filepath.Join(t.TempDir(), "xdg")
	dir := filepath.Join(parent, "throughline", "render")
	root := cacheTestRepo(t, "r.example.test/web:1@"+cacheTestDigest)
	if res := cacheTestGenerate(t, root, &Cache{Dir: dir}); res.CacheErr != nil {
		t.Fatal(res.CacheErr)
	}
	for _, d := range []string{parent, filepath.Dir(dir), dir} {
		fi, err := os.Lstat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want 0700", d, fi.Mode().Perm())
		}
	}
	if res := cacheTestGenerate(t, root, &Cache{Dir: dir}); !res.CacheHit || res.CacheErr != nil {
		t.Errorf("second render: hit=%v warning=%v", res.CacheHit, res.CacheErr)
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// TestCacheEntryNotARegularFile plants, in place of a stored entry's
// files, what someone who can write the cache directory (or a bug) could
// leave there: a FIFO (opening it would wait for a writer forever), a
// link to a valid entry kept elsewhere, and a file larger than the whole
// cache. Each is a miss: a fresh render, never a hang or a read through
// the link.
func TestCacheEntryNotARegularFile(t *testing.T) {
	t.Parallel()
	pinned := "r.example.test/web:1@" + cacheTestDigest
	tests := []struct {
		name  string
		plant func(t *testing.T, jsonFile, yamlFile string)
	}{
		{"manifests are a FIFO", func(t *testing.T, _, yamlFile string) {
			mustRemove(t, yamlFile)
			if err := syscall.Mkfifo(yamlFile, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"entry is a FIFO", func(t *testing.T, jsonFile, _ string) {
			mustRemove(t, jsonFile)
			if err := syscall.Mkfifo(jsonFile, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"entry and manifests are links to a valid entry elsewhere", func(t *testing.T, jsonFile, yamlFile string) {
			away := t.TempDir()
			for _, f := range []string{jsonFile, yamlFile} {
				moved := filepath.Join(away, filepath.Base(f))
				if err := os.Rename(f, moved); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(moved, f); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"manifests larger than the cache", func(t *testing.T, _, yamlFile string) {
			if err := os.Truncate(yamlFile, 2<<20); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &Cache{Dir: filepath.Join(t.TempDir(), "cache"), MaxBytes: 1 << 20}
			first := cacheTestGenerate(t, cacheTestRepo(t, pinned), c)
			jsons, yamls := cacheFiles(t, c.Dir, ".json"), cacheFiles(t, c.Dir, ".yaml")
			if first.CacheHit || len(jsons) != 1 || len(yamls) != 1 {
				t.Fatalf("first render: hit=%v, entries %v %v", first.CacheHit, jsons, yamls)
			}
			tt.plant(t, jsons[0], yamls[0])
			done := make(chan *Result, 1)
			go func() { done <- cacheTestGenerate(t, cacheTestRepo(t, pinned), c) }()
			select {
			case second := <-done:
				if second.CacheHit || string(second.Manifests) != string(first.Manifests) {
					t.Errorf("want a fresh render equal to the first, got hit=%v:\n%s", second.CacheHit, second.Manifests)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("generate hung reading the planted entry")
			}
		})
	}
}

func mustRemove(t *testing.T, file string) {
	t.Helper()
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
}
