package render_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/render"
)

// TestReadForEdit is what pin and accept read the app's files with after
// the render: the confined reader's refusals all hold (a link out of the
// root, .git, a FIFO, a file over the cap, an alias bomb), and the read is
// no input of the render (nothing recorded in the trace).
func TestReadForEdit(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "kustomization.yaml"), []byte("resources: [OUTSIDE-THE-ROOT]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := writeTree(t, map[string]string{
		"app/kustomization.yaml": "resources: [deploy.yaml]\n",
		"app/big.yaml":           strings.Repeat("# padding\n", 200),
		"app/bomb.yaml":          billionLaughs(),
		".git/config":            "[core]\n",
	})
	if err := os.Symlink(filepath.Join(outside, "kustomization.yaml"), filepath.Join(root, "app", "out.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, ".git", "config"), filepath.Join(root, "app", "git.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "app", "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	trace := &render.Trace{}
	fsys, err := render.NewConfinedFS(root, 1024, trace)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := fsys.ReadForEdit(filepath.Join(root, "app", "kustomization.yaml")); err != nil || string(data) != "resources: [deploy.yaml]\n" {
		t.Fatalf("the app's own kustomization: %q, %v", data, err)
	}
	for _, tt := range []struct {
		file string
		want error
	}{
		{"app/out.yaml", render.ErrOutsideRoot},
		{"app/git.yaml", render.ErrGitDir},
		{".git/config", render.ErrGitDir},
		{"app/big.yaml", render.ErrTooLarge},
		{"app/bomb.yaml", render.ErrYAMLLimit},
		{"app/missing.yaml", os.ErrNotExist},
	} {
		data, err := fsys.ReadForEdit(tt.file)
		if !errors.Is(err, tt.want) || data != nil {
			t.Errorf("%s: got %q, %v; want %v", tt.file, data, err, tt.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), tt.file+": ") {
			t.Errorf("%s: the error does not name the file first: %v", tt.file, err)
		}
		if err != nil && strings.Contains(err.Error(), "OUTSIDE-THE-ROOT") {
			t.Errorf("%s: the error shows content from outside the root: %v", tt.file, err)
		}
	}
	done := make(chan error, 1)
	go func() { _, err := fsys.ReadForEdit("app/fifo.yaml"); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("fifo: %v, want not a regular file", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO hung")
	}
	if len(trace.Probes) != 0 {
		t.Errorf("ReadForEdit recorded probes as render inputs: %v", trace.Probes)
	}
}
