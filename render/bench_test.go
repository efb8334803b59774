//go:build unix

package render_test

// Benchmarks of the render path: throughline's cost over bare krusty on the
// same on-disk overlay. Run them with `make bench` (go test -bench +
// benchstat); figures and commands are in docs/benchmarks.md. They measure,
// they never assert on time.
//
// The default set stays small (20 and 500 Deployments). The 2,000-Deployment
// overlay takes krusty 10-16 s per render, so it runs only when
// THROUGHLINE_BENCH_LARGE=1 is set, e.g.
//
//	THROUGHLINE_BENCH_LARGE=1 go test -run '^$' -bench 'Overlay/deployments=2000' \
//	  -benchmem -benchtime 1x -count 6 ./render/

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/internal/benchfixture"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
)

// runKrusty is bare kustomize: default options, the on-disk filesystem.
func runKrusty(b *testing.B, dir string, want int) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		b.Fatal(err)
	}
	if m.Size() != want {
		b.Fatalf("krusty rendered %d objects, want %d", m.Size(), want)
	}
}

// runDeclare is throughline's render path: confined filesystem, krusty,
// policy, rendered hash and Acceptance.
func runDeclare(b *testing.B, root, app string, want int) {
	d, err := acceptance.Declare(context.Background(), acceptance.Request{
		Render:   render.Options{Root: root, Path: app},
		Renderer: "bench",
	})
	if err != nil {
		b.Fatal(err)
	}
	if len(d.Objects) != want {
		b.Fatalf("Declare rendered %d objects, want %d", len(d.Objects), want)
	}
}

// BenchmarkOverlay renders the same on-disk overlay with bare krusty and
// with acceptance.Declare (confined filesystem, render, policy, hash,
// Acceptance). "paired" alternates the two in one loop and reports
// overhead-% (Declare over krusty) measured under the same machine load;
// use it for the ratio on a shared machine.
func BenchmarkOverlay(b *testing.B) {
	for _, n := range benchfixture.Sizes() {
		b.Run(fmt.Sprintf("deployments=%d", n), func(b *testing.B) {
			root := b.TempDir()
			app := benchfixture.WriteOverlay(b, root, n)
			dir := filepath.Join(root, filepath.FromSlash(app))
			b.Run("impl=krusty", func(b *testing.B) {
				b.ReportAllocs()
				start := benchfixture.CPUNow()
				for b.Loop() {
					runKrusty(b, dir, n)
				}
				benchfixture.ReportCPU(b, start)
			})
			b.Run("impl=declare", func(b *testing.B) {
				b.ReportAllocs()
				start := benchfixture.CPUNow()
				for b.Loop() {
					runDeclare(b, root, app, n)
				}
				benchfixture.ReportCPU(b, start)
			})
			b.Run("impl=paired", func(b *testing.B) {
				b.ReportAllocs()
				var kWall, kCPU, dWall, dCPU time.Duration
				add := func(w, c *time.Duration, f func()) {
					dw, dc := timeIt(f)
					*w += dw
					*c += dc
				}
				krustyOnce := func() { add(&kWall, &kCPU, func() { runKrusty(b, dir, n) }) }
				declareOnce := func() { add(&dWall, &dCPU, func() { runDeclare(b, root, app, n) }) }
				for i := 0; b.Loop(); i++ {
					// Alternate the order so neither side always runs
					// right after the other's garbage.
					if i%2 == 0 {
						krustyOnce()
						declareOnce()
					} else {
						declareOnce()
						krustyOnce()
					}
				}
				per := func(d time.Duration) float64 { return float64(d) / float64(b.N) }
				b.ReportMetric(per(kWall), "krusty-ns/op")
				b.ReportMetric(per(dWall), "declare-ns/op")
				b.ReportMetric(per(kCPU), "krusty-cpu-ns/op")
				b.ReportMetric(per(dCPU), "declare-cpu-ns/op")
				b.ReportMetric(100*(per(dWall)-per(kWall))/per(kWall), "overhead-%")
				b.ReportMetric(100*(per(dCPU)-per(kCPU))/per(kCPU), "cpu-overhead-%")
			})
		})
	}
}

// timeIt runs f and returns its wall and CPU time.
func timeIt(f func()) (wall, cpu time.Duration) {
	start, startCPU := time.Now(), benchfixture.CPUNow()
	f()
	return time.Since(start), benchfixture.CPUNow() - startCPU
}

// fsCall is one call krusty made on its filesystem.
type fsCall struct{ op, path string }

// recordingFS records the read calls krusty makes, to replay them on the
// on-disk and the confined filesystem.
type recordingFS struct {
	filesys.FileSystem
	calls []fsCall
}

func (r *recordingFS) rec(op, p string) { r.calls = append(r.calls, fsCall{op, p}) }

func (r *recordingFS) Open(p string) (filesys.File, error) {
	r.rec("open", p)
	return r.FileSystem.Open(p)
}

func (r *recordingFS) IsDir(p string) bool { r.rec("isdir", p); return r.FileSystem.IsDir(p) }

func (r *recordingFS) ReadDir(p string) ([]string, error) {
	r.rec("readdir", p)
	return r.FileSystem.ReadDir(p)
}

func (r *recordingFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	r.rec("abs", p)
	return r.FileSystem.CleanedAbs(p)
}

func (r *recordingFS) Exists(p string) bool { r.rec("exists", p); return r.FileSystem.Exists(p) }

func (r *recordingFS) Glob(p string) ([]string, error) {
	r.rec("glob", p)
	return r.FileSystem.Glob(p)
}

func (r *recordingFS) ReadFile(p string) ([]byte, error) {
	r.rec("read", p)
	return r.FileSystem.ReadFile(p)
}

func (r *recordingFS) Walk(p string, fn filepath.WalkFunc) error {
	r.rec("walk", p)
	return r.FileSystem.Walk(p, fn)
}

func replayCalls(b *testing.B, fsys filesys.FileSystem, calls []fsCall) {
	for _, c := range calls {
		switch c.op {
		case "open":
			f, err := fsys.Open(c.path)
			if err == nil {
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
			}
		case "isdir":
			fsys.IsDir(c.path)
		case "readdir":
			_, _ = fsys.ReadDir(c.path)
		case "abs":
			_, _, _ = fsys.CleanedAbs(c.path)
		case "exists":
			fsys.Exists(c.path)
		case "glob":
			_, _ = fsys.Glob(c.path)
		case "read":
			_, _ = fsys.ReadFile(c.path)
		case "walk":
			_ = fsys.Walk(c.path, func(string, os.FileInfo, error) error { return nil })
		default:
			b.Fatalf("unknown call %q", c.op)
		}
	}
}

// BenchmarkDeclareSteps measures, in short runs that stay precise on a
// shared machine, each piece of work acceptance.Declare adds to the krusty
// run it wraps:
//
//   - open: render.Open (confine the root, read the kustomization tree);
//   - fs=disk and fs=confined: every filesystem call krusty makes during
//     the render, replayed on the on-disk filesystem (what bare krusty uses)
//     and on the ConfinedFS (what throughline gives krusty); their
//     difference is the confinement's cost;
//   - to-objects: converting krusty's ResMap into render.Objects;
//   - policy+hash: policy.CheckObjects and render.Hash on those objects.
//
// Declare's overhead over bare krusty is open + (confined - disk) +
// to-objects + policy+hash (+ building the Acceptance, which is small);
// docs/benchmarks.md divides it by BenchmarkOverlay's krusty time. It runs
// for 500 Deployments, and 2,000 with THROUGHLINE_BENCH_LARGE=1.
func BenchmarkDeclareSteps(b *testing.B) {
	sizes := []int{500}
	if os.Getenv(benchfixture.EnvLarge) != "" {
		sizes = append(sizes, 2000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("deployments=%d", n), func(b *testing.B) {
			root := b.TempDir()
			app := benchfixture.WriteOverlay(b, root, n)
			dir := filepath.Join(root, filepath.FromSlash(app))
			confined, err := render.NewConfinedFS(root, 0, nil)
			if err != nil {
				b.Fatal(err)
			}
			// One render as throughline runs it, recording krusty's calls.
			rec := &recordingFS{FileSystem: confined}
			kopts := krusty.MakeDefaultOptions()
			kopts.LoadRestrictions = types.LoadRestrictionsRootOnly
			kopts.PluginConfig = types.DisabledPluginConfig()
			resMap, err := krusty.MakeKustomizer(kopts).Run(rec, dir)
			if err != nil {
				b.Fatal(err)
			}
			if resMap.Size() != n {
				b.Fatalf("rendered %d objects, want %d", resMap.Size(), n)
			}
			toObjects := func() []render.Object {
				objs := make([]render.Object, 0, resMap.Size())
				for _, r := range resMap.Resources() {
					m, err := r.Map()
					if err != nil {
						b.Fatal(err)
					}
					objs = append(objs, render.Object{Map: m, Source: app})
				}
				return objs
			}
			objs := toObjects()
			b.Logf("%d objects, %d filesystem calls by krusty", len(objs), len(rec.calls))
			disk := filesys.MakeFsOnDisk()
			step := func(name string, f func()) {
				b.Run("step="+name, func(b *testing.B) {
					b.ReportAllocs()
					start := benchfixture.CPUNow()
					for b.Loop() {
						f()
					}
					benchfixture.ReportCPU(b, start)
				})
			}
			step("open", func() {
				if _, err := render.Open(context.Background(), render.Options{Root: root, Path: app}); err != nil {
					b.Fatal(err)
				}
			})
			step("fs=disk", func() { replayCalls(b, disk, rec.calls) })
			step("fs=confined", func() { replayCalls(b, confined, rec.calls) })
			step("to-objects", func() { toObjects() })
			step("policy+hash", func() {
				if res := policy.CheckObjects(objs, nil, ""); len(res.Violations) != 0 {
					b.Fatal(res.Err())
				}
				if _, err := render.Hash(objs); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
