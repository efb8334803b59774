package render_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"sigs.k8s.io/kustomize/api/pkg/loader"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// countingServer serves a ConfigMap patch and counts every request.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_, _ = io.WriteString(w, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {fetched: \"yes\"}}\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestKustomizeCannotFetch: a fetch from inside kustomize's code is refused
// by the guard on http.DefaultTransport, whatever field carries it. The
// PatchTransformer config in a transformers file is a location the
// kustomization does not show: krusty runs, the guard refuses.
func TestKustomizeCannotFetch(t *testing.T) {
	t.Parallel()
	srv, hits := countingServer(t)
	if _, err := loader.NewFileLoaderAtRoot(filesys.MakeFsOnDisk()).Load(srv.URL + "/direct.yaml"); !errors.Is(err, render.ErrNetworkRefused) {
		t.Errorf("kustomize's loader fetched: %v", err)
	}
	root := writeTree(t, map[string]string{
		"app/kustomization.yaml": "resources: [cm.yaml]\ntransformers: [patch.yaml]\n",
		"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"app/patch.yaml":         "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: " + strings.ToUpper(srv.URL[:4]) + srv.URL[4:] + "/p.yaml\n",
	})
	app, err := render.Open(context.Background(), render.Options{Root: root, Path: "app"})
	if err == nil {
		_, err = app.Build(context.Background())
	}
	if !errors.Is(err, exitcode.ErrInvalid) || !errors.Is(err, render.ErrNetworkRefused) {
		t.Errorf("got %v, want the guard's refusal as invalid input", err)
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests reached the server", hits.Load())
	}
}

// TestGuardLeavesOtherClientsAlone: the same transport keeps serving every
// other client of the process, also while renders run.
func TestGuardLeavesOtherClientsAlone(t *testing.T) {
	srv, hits := countingServer(t)
	root := writeTree(t, map[string]string{
		"app/kustomization.yaml": "resources: [cm.yaml]\n",
		"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
	})
	if _, ok := http.DefaultTransport.(*http.Transport); !ok {
		t.Fatalf("http.DefaultTransport is a %T, not an *http.Transport", http.DefaultTransport)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			build(t, root, "app")
		}()
		go func() {
			defer wg.Done()
			resp, err := (&http.Client{}).Get(srv.URL)
			if err != nil {
				t.Errorf("a client outside kustomize was refused: %v", err)
				return
			}
			_ = resp.Body.Close()
		}()
	}
	wg.Wait()
	if hits.Load() != 4 {
		t.Errorf("%d requests arrived, want 4", hits.Load())
	}
}

// TestRemoteDecision: what kustomize fetches or clones is remote whatever
// its spelling; local paths that only look odd are not.
func TestRemoteDecision(t *testing.T) {
	t.Parallel()
	for entry, want := range map[string]bool{
		"http://127.0.0.1/p.yaml":              true,
		"HTTP://127.0.0.1/p.yaml":              true,
		"HtTpS://example.test/p.yaml":          true,
		"http:p.yaml":                          true,
		"git::https://example.test/r.git":      true,
		"GIT::https://example.test/r.git":      true,
		"git@127.0.0.1:org/repo":               true,
		"user@host:org/repo":                   true,
		"host.example.test:org/repo":           true,
		"file:///etc/passwd":                   true,
		"FILE:///etc/passwd":                   true,
		"github.com/org/repo?ref=v1":           true,
		"GitHub.com/org/repo":                  true,
		"ssh://git@127.0.0.1/org/repo":         true,
		"s3://bucket/key":                      true,
		"https://dev.azure.com/o/p/_git/r":     true,
		"app.yaml":                             false,
		"../base":                              false,
		"configs/app.v2.conf":                  false,
		"key:value.yaml":                       false,
		"./dir:with/colon.yaml":                false,
		"apiVersion: v1\nkind: ConfigMap\n":    false,
		"{apiVersion: v1, kind: ConfigMap}":    false,
		"deploy/kustomization.yaml":            false,
		"patches/strategic-merge.yaml":         false,
		"base/v1.2/app":                        false,
		"overlays/prod/../../base/deploy.yaml": false,
	} {
		if got := render.KustomizeRemote(entry); got != want {
			t.Errorf("KustomizeRemote(%q) = %v, want %v", entry, got, want)
		}
	}
}

// TestOutsideRootMessages: a path outside the root is refused with the same
// words whether it exists or not, and no message names a machine path
// outside the root.
func TestOutsideRootMessages(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	write(t, outside, "exists.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
	locked := filepath.Join(outside, "locked")
	mkdir(t, outside, "locked")
	write(t, outside, "locked/f.yaml", "x: y\n")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(locked, 0o755) })
	var msgs []string
	for _, target := range []string{"exists.yaml", "missing.yaml", "locked/f.yaml", "missing-dir/f.yaml"} {
		root := writeTree(t, map[string]string{
			"app/kustomization.yaml": "resources: [cm.yaml, link.yaml]\n",
			"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		})
		if err := os.Symlink(filepath.Join(outside, target), filepath.Join(root, "app", "link.yaml")); err != nil {
			t.Fatal(err)
		}
		var errs []error
		fsys, err := render.NewConfinedFS(root, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = fsys.ReadFile(filepath.Join(root, "app", "link.yaml"))
		errs = append(errs, err)
		_, err = fsys.ReadFile(filepath.Join(outside, target))
		errs = append(errs, err)
		_, _, err = fsys.CleanedAbs(filepath.Join(outside, target))
		errs = append(errs, err)
		_, err = fsys.ReadDir(outside)
		errs = append(errs, err)
		app, err := render.Open(context.Background(), render.Options{Root: root, Path: "app"})
		if err == nil {
			_, err = app.Build(context.Background())
		}
		errs = append(errs, err)
		var all []string
		for _, err := range errs {
			if !errors.Is(err, render.ErrOutsideRoot) {
				t.Errorf("%s: %v, want ErrOutsideRoot", target, err)
				continue
			}
			if strings.Contains(err.Error(), outside) || strings.Contains(err.Error(), root) || strings.Contains(err.Error(), "lstat") {
				t.Errorf("%s: the message names a machine path: %v", target, err)
			}
			all = append(all, err.Error())
		}
		msgs = append(msgs, strings.ReplaceAll(strings.Join(all, "\n"), target, "TARGET"))
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i] != msgs[0] {
			t.Errorf("paths outside the root read differently:\n%s\n---\n%s", msgs[0], msgs[i])
		}
	}
}
