//go:build unix

package render_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/render"
)

// TestReplayPlanHostile: a compiled trace (the resident renderer's
// ReplayPlan, with its fast path for files) answers every hostile change
// of a new checkout as the probes replayed one by one do, and every one of
// them misses. Content decides, not size or times; a symbolic link swapped
// in for a file or a directory, a named pipe, a file above the size cap,
// all miss. Small and large traces (the large one spread over workers).
func TestReplayPlanHostile(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, n := range []int{2, 600} {
		t.Run(fmt.Sprintf("files=%d", n), func(t *testing.T) {
			files := map[string]string{}
			var resources []string
			for i := range n {
				name := fmt.Sprintf("cm-%03d.yaml", i)
				if i == n-1 {
					name = "sub/" + name // a directory of its own, probed only through its file
				}
				resources = append(resources, name)
				files["base/"+name] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%03d}\n", i)
			}
			files["base/kustomization.yaml"] = "resources: [" + strings.Join(resources, ", ") + "]\n"
			files["app/kustomization.yaml"] = "resources: [../base]\n"
			files["other/unrelated.yaml"] = "x: 1\n"
			first := writeTree(t, files)
			trace := &render.Trace{}
			app, err := render.Open(context.Background(), render.Options{Root: first, Path: "app", Trace: trace})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := app.Build(context.Background()); err != nil {
				t.Fatal(err)
			}
			probes := trace.Compact()
			plan := render.CompileReplay(probes)
			if got := plan.Len(); got != len(probes) {
				t.Fatalf("plan of %d probes, trace of %d", got, len(probes))
			}
			if nf, paired := render.PlanFiles(plan); nf < n || paired < n {
				t.Fatalf("plan has %d file probes, %d with their abs probe; want at least %d of each", nf, paired, n)
			}
			target := "base/" + resources[n-1] // the last file: the last worker's
			body := files[target]

			tests := []struct {
				name    string
				edit    func(t *testing.T, root string)
				want    bool
				maxFile int64
			}{
				{"unrelated change", func(t *testing.T, root string) {
					write(t, root, "other/unrelated.yaml", "x: 2\n")
				}, true, 0},
				{"same size and mtime, other content", func(t *testing.T, root string) {
					p := filepath.Join(root, target)
					fi, err := os.Stat(p)
					if err != nil {
						t.Fatal(err)
					}
					changed := strings.Replace(body, "cm-", "cx-", 1)
					if len(changed) != len(body) || changed == body {
						t.Fatal("the edit must keep the size")
					}
					write(t, root, target, changed)
					if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
						t.Fatal(err)
					}
					if fi2, err := os.Stat(p); err != nil || fi2.Size() != fi.Size() || !fi2.ModTime().Equal(fi.ModTime()) {
						t.Fatalf("size and mtime not kept: %v", err)
					}
				}, false, 0},
				{"file swapped for a symlink to the same content inside the root", func(t *testing.T, root string) {
					write(t, root, "other/same.yaml", body)
					swapSymlink(t, filepath.Join(root, target), "../other/same.yaml")
				}, false, 0},
				{"file swapped for a symlink to the same content outside the root", func(t *testing.T, root string) {
					outside := t.TempDir()
					write(t, outside, "same.yaml", body)
					swapSymlink(t, filepath.Join(root, target), filepath.Join(outside, "same.yaml"))
				}, false, 0},
				{"the base directory swapped for a symlink to a copy", func(t *testing.T, root string) {
					if err := os.Rename(filepath.Join(root, "base"), filepath.Join(root, "copy")); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink("copy", filepath.Join(root, "base")); err != nil {
						t.Fatal(err)
					}
				}, false, 0},
				{"the file's directory swapped for a symlink to a copy", func(t *testing.T, root string) {
					if err := os.Rename(filepath.Join(root, "base/sub"), filepath.Join(root, "copy")); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink("../copy", filepath.Join(root, "base/sub")); err != nil {
						t.Fatal(err)
					}
				}, false, 0},
				{"file swapped for a named pipe", func(t *testing.T, root string) {
					p := filepath.Join(root, target)
					if err := os.Remove(p); err != nil {
						t.Fatal(err)
					}
					if err := syscall.Mkfifo(p, 0o644); err != nil {
						t.Fatal(err)
					}
				}, false, 0},
				{"file above the size cap", func(*testing.T, string) {}, false, int64(len(body) - 1)},
				{"file removed", func(t *testing.T, root string) {
					if err := os.Remove(filepath.Join(root, target)); err != nil {
						t.Fatal(err)
					}
				}, false, 0},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					root := writeTree(t, maps.Clone(files)) // a new commit: a fresh copy
					tt.edit(t, root)
					fsys, err := render.NewConfinedFS(root, tt.maxFile, nil)
					if err != nil {
						t.Fatal(err)
					}
					done := make(chan [2]bool, 1)
					go func() {
						slow, _ := render.NewConfinedFS(root, tt.maxFile, nil)
						done <- [2]bool{plan.Replay(fsys), render.ReplayEach(slow, probes)}
					}()
					select {
					case got := <-done:
						if got[0] != tt.want || got[1] != tt.want {
							t.Errorf("plan replayed %v, probes one by one %v; want %v", got[0], got[1], tt.want)
						}
					case <-time.After(30 * time.Second):
						t.Fatal("replay blocked")
					}
				})
			}
		})
	}
}

func swapSymlink(t *testing.T, p, target string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// FuzzReplayPlan: for any path a render could probe (a cache entry's
// probes come from disk, before its sum is checked), the plan's fast path
// answers as the probes replayed one by one, on the tree the probes were
// recorded from and on a copy whose files were swapped for symbolic links.
func FuzzReplayPlan(f *testing.F) {
	files := map[string]string{
		"base/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"base/sub/x.yaml": "x: 1\n",
		"other/same.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"top.yaml":        "y: 2\n",
	}
	outside := f.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "cm.yaml"), []byte(files["base/cm.yaml"]), 0o644); err != nil {
		f.Fatal(err)
	}
	tree := func(links bool) string {
		root := f.TempDir()
		for name, body := range files {
			p := filepath.Join(root, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				f.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				f.Fatal(err)
			}
		}
		for name, target := range map[string]string{"in.yaml": "other/same.yaml", "out.yaml": filepath.Join(outside, "cm.yaml"), "dir": "base"} {
			if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
				f.Fatal(err)
			}
		}
		if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
			f.Fatal(err)
		}
		if links {
			for name, target := range map[string]string{"base/cm.yaml": "../other/same.yaml", "top.yaml": filepath.Join(outside, "cm.yaml")} {
				p := filepath.Join(root, filepath.FromSlash(name))
				if err := os.Remove(p); err != nil {
					f.Fatal(err)
				}
				if err := os.Symlink(target, p); err != nil {
					f.Fatal(err)
				}
			}
		}
		return root
	}
	recorded, swapped := tree(false), tree(true)
	for _, p := range []string{"base/cm.yaml", "top.yaml", "in.yaml", "out.yaml", "dir/cm.yaml", "fifo", "base/sub/x.yaml",
		"../x", ".git/config", "base/../base/cm.yaml", "base//cm.yaml", "/etc/passwd", "base/missing.yaml", "base", "."} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		trace := &render.Trace{}
		fsys, err := render.NewConfinedFS(recorded, 0, trace)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fsys.ReadFile(p)
		_, _, _ = fsys.CleanedAbs(p)
		probes := trace.Compact()
		plan := render.CompileReplay(probes)
		for _, root := range []string{recorded, swapped} {
			fast, err := render.NewConfinedFS(root, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			slow, err := render.NewConfinedFS(root, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := plan.Replay(fast), render.ReplayEach(slow, probes); got != want {
				t.Fatalf("%q on %s: the plan replayed %v, the probes one by one %v", p, root, got, want)
			}
		}
	})
}
