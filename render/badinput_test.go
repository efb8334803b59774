package render_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/render"
)

// TestBadInput feeds the renderer what a hostile or broken repository holds.
// Each case must fail with an *exitcode.InvalidInput naming the file, never panic, and
// never let content from outside the root reach the error.
func TestBadInput(t *testing.T) {
	t.Parallel()
	const secret = "TOP-SECRET-OUTSIDE-THE-ROOT"
	outside := t.TempDir()
	secretFile := filepath.Join(outside, "secret.yaml")
	if err := os.WriteFile(secretFile, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: "+secret+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "kustomization.yaml"), []byte("resources: [secret.yaml]\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	aliasBomb := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n" + indent(billionLaughs())

	// Each message (the file it names) is in testdata/bad-input.golden.
	msgs := golden.ErrorLines(t, "testdata/bad-input.golden", 14)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root string)
	}{
		{"malformed YAML", func(t *testing.T, root string) {
			write(t, root, "app/bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n  data: [\n")
		}},
		{"YAML alias bomb", func(t *testing.T, root string) {
			write(t, root, "app/bomb.yaml", aliasBomb)
		}},
		{"100 MB file", func(t *testing.T, root string) {
			p := filepath.Join(root, "app", "huge.yaml")
			write(t, root, "app/huge.yaml", "")
			if err := os.Truncate(p, 100<<20); err != nil {
				t.Fatal(err)
			}
		}},
		{"mapping key that is not a string", func(t *testing.T, root string) {
			write(t, root, "app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {1: a}\n")
		}},
		{"binary file", func(t *testing.T, root string) {
			write(t, root, "app/blob.yaml", "\x7fELF\x02\x01\x01\x00\x00\x00binary")
		}},
		{"symlink to a file outside the root", func(t *testing.T, root string) {
			mkdir(t, root, "app")
			if err := os.Symlink(secretFile, filepath.Join(root, "app", "secret.yaml")); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlinked directory outside the root", func(t *testing.T, root string) {
			write(t, root, "app/kustomization.yaml", "resources: [../linked]\n")
			if err := os.Symlink(outside, filepath.Join(root, "linked")); err != nil {
				t.Fatal(err)
			}
		}},
		{"kustomization referencing a path outside the root", func(t *testing.T, root string) {
			rel, err := filepath.Rel(filepath.Join(root, "app"), outside)
			if err != nil {
				t.Fatal(err)
			}
			write(t, root, "app/kustomization.yaml", "resources: ["+filepath.ToSlash(rel)+"]\n")
		}},
		{"kustomization patch file outside the root", func(t *testing.T, root string) {
			write(t, root, "app/kustomization.yaml", "resources: [cm.yaml]\npatches:\n  - path: "+secretFile+"\n")
			write(t, root, "app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
		}},
		{"directory with no manifests", func(t *testing.T, root string) {
			write(t, root, "app/README.md", "# nothing to render\n")
		}},
		{"manifest without kind", func(t *testing.T, root string) {
			write(t, root, "app/cm.yaml", "apiVersion: v1\nmetadata: {name: a}\n")
		}},
		{"a scalar document", func(t *testing.T, root string) {
			write(t, root, "app/cm.yaml", "just a string\n")
		}},
		{"named pipe instead of a file", func(t *testing.T, root string) {
			mkdir(t, root, "app")
			if err := syscall.Mkfifo(filepath.Join(root, "app", "fifo.yaml"), 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}},
		{"application path outside the root", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			path := "app"
			if tc.setup != nil {
				tc.setup(t, root)
			} else {
				path = outside
			}
			ctx := context.Background()
			app, err := render.Open(ctx, render.Options{Root: root, Path: path})
			if err == nil {
				_, err = app.Build(ctx)
			}
			if err == nil {
				t.Fatal("rendered without error")
			}
			t.Logf("error: %v", err)
			if !errors.Is(err, exitcode.ErrInvalid) {
				t.Errorf("error is not an invalid-input error: %T %v", err, err)
			}
			rel, _ := filepath.Rel(filepath.Join(root, "app"), outside)
			msgs(tc.name, errors.New(strings.NewReplacer(outside, "OUTSIDE", root, "ROOT", rel, "OUTSIDE-RELATIVE").Replace(err.Error())))
			if strings.Contains(err.Error(), secret) {
				t.Errorf("content from outside the root leaked into the error: %v", err)
			}
		})
	}
}

// billionLaughs is YAML whose aliases expand to 9^9 nodes.
func billionLaughs() string {
	bomb := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		bomb += n + ": &" + n + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ",") + "]\n"
		prev = n
	}
	return bomb
}

func TestSymlinkInsideRootIsFollowed(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{
		"shared/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\n",
	})
	mkdir(t, root, "app")
	if err := os.Symlink(filepath.Join(root, "shared", "cm.yaml"), filepath.Join(root, "app", "cm.yaml")); err != nil {
		t.Fatal(err)
	}
	objs := build(t, root, "app")
	if len(objs) != 1 || objs[0].ID().Name != "shared" {
		t.Fatalf("objects %v", objs)
	}
}

func TestOversizedFileWithinCap(t *testing.T) {
	t.Parallel()
	root := writeTree(t, map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"})
	_, err := render.Open(context.Background(), render.Options{Root: root, Path: "app", MaxFileSize: 10})
	if err == nil {
		app, _ := render.Open(context.Background(), render.Options{Root: root, Path: "app", MaxFileSize: 10})
		_, err = app.Build(context.Background())
	}
	if !errors.Is(err, render.ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge with a 10-byte cap", err)
	}
}

func write(t *testing.T, root, name, body string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	mkdir(t, root, filepath.Dir(name))
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, root, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(name)), 0o755); err != nil {
		t.Fatal(err)
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n") + "\n"
}
