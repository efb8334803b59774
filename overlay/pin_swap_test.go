package overlay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/throughline-dev/throughline/render"
)

// TestPinReadsWhatTheRenderConfined swaps the app's files between the
// render that plans the pin and the edit that writes it, as a process
// racing pin in the same checkout could: a link out of the repository, a
// link into .git, a FIFO (opening it would wait for a writer). The edit must refuse each, leaving the file as
// swapped, and never copy what is outside into the repository (before, it
// read with os.ReadFile and wrote the outside file's text, pinned, over
// the link).
func TestPinReadsWhatTheRenderConfined(t *testing.T) {
	t.Parallel()
	const secret = "OUTSIDE-THE-REPOSITORY"
	for _, tc := range []struct {
		name, file string // file: what is swapped
		swap       func(t *testing.T, root, file string)
		want       error
	}{
		{"kustomization linked out of the repository", "app/kustomization.yaml", func(t *testing.T, root, file string) {
			outside := filepath.Join(t.TempDir(), "kustomization.yaml")
			if err := os.WriteFile(outside, []byte("# "+secret+"\nresources: [deployment.yaml]\nimages:\n  - name: example.com/shop/web\n    newTag: \"1.0\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			relink(t, outside, filepath.Join(root, file))
		}, render.ErrOutsideRoot},
		{"kustomization linked into .git", "app/kustomization.yaml", func(t *testing.T, root, file string) {
			git := filepath.Join(root, ".git", "kustomization.yaml")
			if err := os.MkdirAll(filepath.Dir(git), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(git, []byte("# "+secret+"\nresources: [deployment.yaml]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			relink(t, git, filepath.Join(root, file))
		}, render.ErrGitDir},
		{"kustomization replaced by a FIFO", "app/kustomization.yaml", func(t *testing.T, root, file string) {
			p := filepath.Join(root, file)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := tree(t, map[string]string{
				"app/deployment.yaml":    baseDeployment,
				"app/kustomization.yaml": "resources:\n  - deployment.yaml\nimages:\n  - name: example.com/shop/web\n    newTag: \"1.0\"\n",
			})
			p, err := PlanPin(context.Background(), render.Options{Root: root, Path: filepath.Join(root, "app")}, PinPolicy{})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Unpinned) == 0 {
				t.Fatal("nothing to pin: the test pins nothing")
			}
			tc.swap(t, root, tc.file)
			changes, err := p.Apply(map[string]string{"example.com/shop/web:1.0": dig2, "example.com/shop/agent": dig2, "example.com/shop/agent:latest": dig2})
			if err == nil {
				t.Fatalf("pin edited the swapped file: %v", changes)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
			if tc.want == nil && !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("got %v, want not a regular file", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the refusal shows what is outside: %v", err)
			}
			if fi, err := os.Lstat(filepath.Join(root, tc.file)); err != nil || fi.Mode().IsRegular() {
				t.Errorf("the swapped file was replaced: %v %v", fi, err)
			}
		})
	}
}

// relink replaces file with a link to target.
func relink(t *testing.T, target, file string) {
	t.Helper()
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, file); err != nil {
		t.Fatal(err)
	}
}

// TestPinWritesAllOrNothing: pin edits two files and the second edit does
// not parse back to what was planned; neither file is written (before,
// the first was, and pin stopped half-way).
func TestPinWritesAllOrNothing(t *testing.T) {
	t.Parallel()
	root := tree(t, map[string]string{"a.yaml": "image: x\n", "b.yaml": "image: x\n"})
	var p Pin
	for i, name := range []string{"a.yaml", "b.yaml"} {
		abs := filepath.Join(root, name)
		data, err := os.ReadFile(abs)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(name, data)
		if err != nil {
			t.Fatal(err)
		}
		value := "x@" + dig2
		if i == 1 {
			value = "b: c" // becomes a mapping: not the planned document
		}
		if err := f.Replace(f.Documents()[0].Content[0].Content[1], value); err != nil {
			t.Fatal(err)
		}
		p.files = append(p.files, &pinFile{abs: abs, f: f, changes: []string{name + ": pinned"}})
	}
	changes, err := p.write()
	if err == nil || !strings.Contains(err.Error(), "b.yaml: pin would not edit the file cleanly") || len(changes) != 0 {
		t.Fatalf("got %v, %v; want the not-clean refusal and no change", changes, err)
	}
	for _, name := range []string{"a.yaml", "b.yaml"} {
		if data, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(data) != "image: x\n" {
			t.Errorf("%s was written: %q %v", name, data, err)
		}
	}
}

// TestPinRun: Run resolves what Refs names, writes, and proves the result
// by rendering again; a resolver that fails writes nothing.
func TestPinRun(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"app/deployment.yaml":    baseDeployment,
		"app/kustomization.yaml": "resources:\n  - deployment.yaml\n",
	}
	for _, fail := range []bool{false, true} {
		root := tree(t, files)
		p, err := PlanPin(context.Background(), render.Options{Root: root, Path: filepath.Join(root, "app")}, PinPolicy{})
		if err != nil {
			t.Fatal(err)
		}
		var asked []string
		resolve := func(_ context.Context, refs []string) (map[string]string, error) {
			asked = refs
			if fail {
				return nil, errors.New("registry down")
			}
			out := map[string]string{}
			for _, r := range refs {
				out[r] = dig2
			}
			return out, nil
		}
		changes, err := p.Run(context.Background(), resolve)
		if len(asked) == 0 {
			t.Fatal("Run asked the resolver nothing")
		}
		data, rerr := os.ReadFile(filepath.Join(root, "app", "kustomization.yaml"))
		if rerr != nil {
			t.Fatal(rerr)
		}
		switch {
		case fail && (err == nil || len(changes) != 0 || string(data) != files["app/kustomization.yaml"]):
			t.Errorf("resolver failed: %v, %v, kustomization %q", changes, err, data)
		case !fail && (err != nil || len(changes) != len(asked) || !strings.Contains(string(data), dig2)):
			t.Errorf("pinned: %v, %v, kustomization %q", changes, err, data)
		}
	}
}
