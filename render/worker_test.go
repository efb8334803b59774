package render_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// TestMain serves render.WorkerCommand when the test binary is started as
// the render child (testWorker), so these tests run the real child process.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == render.WorkerCommand {
		if err := render.ServeWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testWorker starts this test binary as the render child.
var testWorker = &render.Worker{Args: []string{render.WorkerCommand}}

// TestWorkerRendersAsInProcess: the child process gives the objects, the
// hash, the trace (for the cmp cache) and the errors of the in-process
// render, exit codes and messages included.
func TestWorkerRendersAsInProcess(t *testing.T) {
	exampleRoot, _ := filepath.Abs("../examples/gitops-env")
	bad := writeTree(t, map[string]string{
		"app/kustomization.yaml": "resources: [cm.yaml]\npatches:\n- path: p.yaml\n",
		"app/cm.yaml":            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: hunter2-very-secret}\n",
		"app/p.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: missing}\ndata: {x: \"1\"}\n",
		"num/kustomization.yaml": "resources: [d.yaml]\n",
		"num/d.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 3, x: 1.5, " +
			"big: 9007199254740993, u: 18446744073709551615, f: 1.0e3, s: \"007\"}\n",
	})
	cases := []struct{ root, path string }{
		{exampleRoot, "apps/checkout/overlays/production"},
		{exampleRoot, "apps/checkout/overlays/dev"},
		{bad, "app"},
		{bad, "num"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			build := func(w *render.Worker) ([]render.Object, []render.Probe, error) {
				render.UseWorker(w)
				defer render.UseWorker(nil)
				trace := &render.Trace{}
				app, err := render.Open(context.Background(), render.Options{Root: c.root, Path: c.path, Trace: trace})
				if err != nil {
					t.Fatal(err)
				}
				objs, err := app.Build(context.Background())
				return objs, trace.Compact(), err
			}
			want, wantTrace, wantErr := build(nil)
			got, gotTrace, gotErr := build(testWorker)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || exitcode.Code(gotErr) != exitcode.Code(wantErr) {
				t.Fatalf("error %v (exit %d), in-process %v (exit %d)", gotErr, exitcode.Code(gotErr), wantErr, exitcode.Code(wantErr))
			}
			if strings.Contains(fmt.Sprint(gotErr), "hunter2") {
				t.Errorf("a Secret value in the message: %v", gotErr)
			}
			// Canonical JSON: a float with an integral value (1.0e3) may
			// come back as an int, which serializes the same.
			if len(got) != len(want) {
				t.Fatalf("%d objects, in-process %d", len(got), len(want))
			}
			for i := range got {
				g, _ := render.Canonical(got[i])
				w, _ := render.Canonical(want[i])
				if string(g) != string(w) || got[i].Source != want[i].Source {
					t.Errorf("object %d: %s from %s, in-process %s from %s", i, g, got[i].Source, w, want[i].Source)
				}
			}
			gh, _ := render.Hash(got)
			wh, _ := render.Hash(want)
			if gh != wh {
				t.Errorf("hash %s, in-process %s", gh, wh)
			}
			if !reflect.DeepEqual(gotTrace, wantTrace) {
				t.Errorf("trace differs:\n%v\nin-process:\n%v", gotTrace, wantTrace)
			}
		})
	}
}

// TestWorkerCannotRunGit: kustomize clones a git repo spec by running the
// git it finds on PATH. An entry that slipped past the refusal (a field a
// future kustomize loads that loadedEntries does not list) would clone
// in-process; the child has no git on its PATH, so it cannot, and leaves
// nothing in the temporary directory.
func TestWorkerCannotRunGit(t *testing.T) {
	bin := t.TempDir()
	called := filepath.Join(t.TempDir(), "git-called")
	script := "#!/bin/sh\necho \"$@\" >> " + called + "\nexit 1\n"
	for _, name := range []string{"git", "ssh"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root := writeTree(t, map[string]string{
		"app/kustomization.yaml": "resources:\n- https://github.com/example/repo//base?ref=v1\n",
	})
	tmpBase := t.TempDir()
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("GIT_EXEC_PATH", bin)
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	for i, w := range []*render.Worker{nil, testWorker} {
		_ = os.Remove(called)
		tmp := filepath.Join(tmpBase, fmt.Sprint(i))
		if err := os.Mkdir(tmp, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Setenv("TMPDIR", tmp)
		app, err := render.Open(context.Background(), render.Options{Root: root, Path: "app"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = render.BuildUnchecked(context.Background(), app, w)
		_, statErr := os.Stat(called)
		if w == nil {
			// The mechanism is real: in-process, kustomize runs git.
			if statErr != nil {
				t.Fatalf("in-process kustomize did not run git (the test proves nothing): %v", err)
			}
			continue
		}
		if statErr == nil {
			t.Errorf("the render child ran git")
		}
		t.Logf("in the child: %v", err)
		// The child's error crosses the process boundary as text: no
		// exec.ErrNotFound to match.
		if err == nil || !strings.Contains(err.Error(), `"git": executable file not found`) {
			t.Errorf("want kustomize's no-git error, got %v", err)
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Errorf("left in TMPDIR: %v", left)
		}
	}
}

// TestWorkerMemoryBudget: a child past its memory budget is invalid input
// naming the kustomization (ErrMemoryBudget), not a crash of the parent.
func TestWorkerMemoryBudget(t *testing.T) {
	files := map[string]string{}
	var res []string
	for i := range 200 {
		name := fmt.Sprintf("cm%03d.yaml", i)
		res = append(res, name)
		files["app/"+name] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm%03d}\ndata: {x: %q}\n",
			i, strings.Repeat("x", 1<<20))
	}
	files["app/kustomization.yaml"] = "resources: [" + strings.Join(res, ", ") + "]\n"
	root := writeTree(t, files)
	w := *testWorker
	w.MemoryLimit = 64 << 20
	render.UseWorker(&w)
	defer render.UseWorker(nil)
	app, err := render.Open(context.Background(), render.Options{Root: root, Path: "app"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.Build(context.Background())
	if exitcode.Code(err) != exitcode.Invalid || !strings.Contains(fmt.Sprint(err), "app/kustomization.yaml: render exceeded its memory budget") {
		t.Errorf("exit %d: %v", exitcode.Code(err), err)
	}
}

// TestWorkerOnExit: OnExit hears of every child, its render refused or
// not. A child that answered reports its own peak memory: the child that
// read 20 MiB of ConfigMaps peaked above the one that read one ConfigMap
// (and neither at the parent's peak, which the race detector makes about
// 1 GiB: wait4's ru_maxrss of a vfork+exec child carries it). A child
// killed for its memory budget answers nothing: no peak.
func TestWorkerOnExit(t *testing.T) {
	files := map[string]string{
		"small/kustomization.yaml": "resources: [cm.yaml]\n",
		"small/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: small}\ndata: {x: \"1\"}\n",
	}
	for dir, n := range map[string]int{"large": 100, "over": 200} {
		var res []string
		for i := range n {
			name := fmt.Sprintf("cm%03d.yaml", i)
			res = append(res, name)
			size := 200 << 10
			if dir == "over" {
				size = 1 << 20
			}
			files[dir+"/"+name] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm%03d}\ndata: {x: %q}\n",
				i, strings.Repeat("x", size))
		}
		files[dir+"/kustomization.yaml"] = "resources: [" + strings.Join(res, ", ") + "]\n"
	}
	root := writeTree(t, files)
	peak := map[string]int64{}
	for _, c := range []struct {
		path    string
		limit   int64
		refused bool
	}{{"small", 0, false}, {"large", 0, false}, {"over", 64 << 20, true}} {
		var exits []render.ChildExit
		w := *testWorker
		w.MemoryLimit = c.limit
		w.OnExit = func(e render.ChildExit) { exits = append(exits, e) }
		render.UseWorker(&w)
		app, err := render.Open(context.Background(), render.Options{Root: root, Path: c.path})
		if err != nil {
			t.Fatal(err)
		}
		_, err = app.Build(context.Background())
		render.UseWorker(nil)
		if (err != nil) != c.refused {
			t.Fatalf("%s: err %v, want refused %v", c.path, err, c.refused)
		}
		if len(exits) != 1 {
			t.Fatalf("%s: OnExit called %d times, want once", c.path, len(exits))
		}
		if exits[0].CPU <= 0 {
			t.Errorf("%s: CPU %v, want wait4's", c.path, exits[0].CPU)
		}
		peak[c.path] = exits[0].PeakRSS
	}
	if peak["over"] != 0 {
		t.Errorf("the child killed for its budget reported a peak of %d bytes: it answered nothing", peak["over"])
	}
	if runtime.GOOS == "linux" {
		if peak["small"] < 1<<20 || peak["large"] <= peak["small"] || peak["large"] > 512<<20 {
			t.Errorf("peak RSS: small render %d bytes, 20 MiB render %d: want at least 1 MiB, the second larger, below 512 MiB",
				peak["small"], peak["large"])
		}
	}
}

func TestParsePeakRSS(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t   1234 kB\nVmRSS:\t 1000 kB\n", 1234 << 10},
		{"VmHWM: 0 kB\n", 0},
		{"VmRSS:\t 1000 kB\n", 0},
		{"VmHWM:\t 12 MB\n", 0},
		{"VmHWM:\t -5 kB\n", 0},
		{"VmHWM:\t 99999999999999999999 kB\n", 0},
		{"VmHWM:\n", 0},
		{"", 0},
	} {
		if got := render.ParsePeakRSS([]byte(tc.in)); got != tc.want {
			t.Errorf("ParsePeakRSS(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestCustomSchemaDoesNotLeak: a kustomization with an openapi field sets
// kustomize's process-wide schema, which kustomize's own reset keeps; the
// next render of the process (promote renders every environment, the
// fuzzer and these tests render many) panicked on a schema that does not
// parse, or merged its patches with a schema that does and got another
// hash. Each render in a child process starts clean, and the in-process
// render resets the schema after such a kustomization.
func TestCustomSchemaDoesNotLeak(t *testing.T) {
	exampleRoot, _ := filepath.Abs("../examples/gitops-env")
	root := writeTree(t, map[string]string{
		"custom/kustomization.yaml": "resources: [cm.yaml]\nopenapi: {path: schema.json}\n",
		"custom/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n",
		"custom/schema.json":        "K=V\n",
	})
	hash := func(root, path string) string {
		t.Helper()
		app, err := render.Open(context.Background(), render.Options{Root: root, Path: path})
		if err != nil {
			t.Fatal(err)
		}
		objs, err := app.Build(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		h, err := render.Hash(objs)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	overlay := "apps/checkout/overlays/production"
	for _, w := range []*render.Worker{nil, testWorker} {
		render.UseWorker(w)
		before := hash(exampleRoot, overlay)
		if app, err := render.Open(context.Background(), render.Options{Root: root, Path: "custom"}); err == nil {
			_, _ = app.Build(context.Background()) // renders or not: its schema is what matters
		}
		if after := hash(exampleRoot, overlay); after != before {
			t.Errorf("worker %v: the overlay renders %s after a custom schema, %s before", w != nil, after, before)
		}
		render.UseWorker(nil)
	}
}
