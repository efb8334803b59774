package acceptance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/render"
)

const testDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: ghcr.io/shop/web@sha256:` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `
`

func writeTestFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		files map[string]string
		// kustomization is the app's kustomization after two writes ("" = none).
		kustomization string
	}{
		{"kustomization keeps its comments", map[string]string{
			"apps/web/overlays/production/kustomization.yaml": "# the production overlay\nresources:\n- deployment.yaml # the app\n",
			"apps/web/overlays/production/deployment.yaml":    testDeployment,
		}, "# the production overlay\nresources:\n- deployment.yaml # the app\n- " + File + "\n"},
		{"kustomization without resources", map[string]string{
			"apps/web/overlays/production/kustomization.yaml": "namespace: shop\n",
			"apps/web/overlays/production/deployment.yaml":    testDeployment,
		}, ""},
		{"directory of manifests", map[string]string{
			"apps/web/overlays/production/deployment.yaml": testDeployment,
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeTestFiles(t, root, tc.files)
			dir := filepath.Join(root, "apps", "web", "overlays", "production")
			req := Request{Render: render.Options{Root: root, Path: dir}, Renderer: "test"}
			d, err := Declare(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := d.WriteFile(); err != nil {
					t.Fatal(err)
				}
			}
			body, err := os.ReadFile(filepath.Join(dir, File))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{fileHeader, "kind: Acceptance", "renderedHash: " + d.Hash, "app: web"} {
				if !strings.Contains(string(body), want) {
					t.Errorf("%s lacks %q:\n%s", File, want, body)
				}
			}
			if strings.Contains(string(body), "sourceRevision") {
				t.Errorf("%s names a source revision:\n%s", File, body)
			}
			k, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
			switch {
			case tc.kustomization != "" && string(k) != tc.kustomization:
				t.Errorf("kustomization:\n%s\nwant:\n%s", k, tc.kustomization)
			case tc.kustomization == "" && err == nil && strings.Count(string(k), File) != 1:
				t.Errorf("kustomization does not list %s once:\n%s", File, k)
			}
			again, err := Declare(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if why := again.Stale(); why != "" || again.Hash != d.Hash {
				t.Errorf("written Acceptance is stale: %s (hash %s, was %s)", why, again.Hash, d.Hash)
			}
		})
	}
}

// TestWriteFileReadsConfined swaps the app's kustomization for a link out
// of the repository between the render and the write, as a process
// racing `render --write-acceptance` in the checkout could: the edit is
// refused and the link left alone (before, the outside file's text, with
// the Acceptance added, was written into the repository over the link),
// and nothing is written, not even the Acceptance.
func TestWriteFileReadsConfined(t *testing.T) {
	t.Parallel()
	const secret = "OUTSIDE-THE-REPOSITORY"
	root := t.TempDir()
	writeTestFiles(t, root, map[string]string{
		"apps/web/overlays/production/kustomization.yaml": "resources:\n- deployment.yaml\n",
		"apps/web/overlays/production/deployment.yaml":    testDeployment,
	})
	dir := filepath.Join(root, "apps", "web", "overlays", "production")
	d, err := Declare(context.Background(), Request{Render: render.Options{Root: root, Path: dir}, Renderer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "kustomization.yaml")
	if err := os.WriteFile(outside, []byte("# "+secret+"\nresources:\n- deployment.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k := filepath.Join(dir, "kustomization.yaml")
	if err := os.Remove(k); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, k); err != nil {
		t.Fatal(err)
	}
	err = d.WriteFile()
	if !errors.Is(err, render.ErrOutsideRoot) {
		t.Fatalf("got %v, want %v", err, render.ErrOutsideRoot)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("the refusal shows the file: %v", err)
	}
	if fi, err := os.Lstat(k); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, File)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused write left %s behind (%v): an Acceptance no kustomization lists", File, err)
	}
}
