package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// TestMain serves the hidden render command when the test binary is started
// as the render child (renderWorker runs os.Executable), so the tests run
// the real child process.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == render.WorkerCommand {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// slowKustomization writes an app whose render spends many seconds in krusty
// after its last file read: n Deployments in one file, each with its own
// inline patch, so krusty reads two files and then applies n patches
// (3000: about 24 s of krusty on a 2-core machine, 4000 well over 20 s).
func slowKustomization(t *testing.T, n int) string {
	t.Helper()
	root := t.TempDir()
	app := filepath.Join(root, "app")
	if err := os.Mkdir(app, 0o755); err != nil {
		t.Fatal(err)
	}
	var deploys, kust bytes.Buffer
	kust.WriteString("resources:\n- deploys.yaml\npatches:\n")
	for i := range n {
		fmt.Fprintf(&deploys, "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d%d\n"+
			"spec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: nginx\n", i)
		fmt.Fprintf(&kust, "- patch: \"{apiVersion: apps/v1, kind: Deployment, metadata: {name: d%d}, spec: {replicas: 2}}\"\n", i)
	}
	for name, b := range map[string][]byte{"deploys.yaml": deploys.Bytes(), "kustomization.yaml": kust.Bytes()} {
		if err := os.WriteFile(filepath.Join(app, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// renderChildren lists the render children of this process still alive
// (zombies included: a child that was not waited for).
func renderChildren(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var out []string
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 && f[1] == fmt.Sprint(os.Getpid()) {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if bytes.Contains(cmdline, []byte(render.WorkerCommand)) || f[0] == "Z" {
				out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
			}
		}
	}
	return out
}

// TestTimeoutAndCancelEndKrusty: --timeout and SIGTERM (the cancelled
// context of main's signal.NotifyContext) end a render that is deep inside
// krusty, after its last file read (4000 Deployments, 4000 inline patches:
// in-process, the render ran to its end, far past the deadline), by
// killing the render child; nothing of it stays behind. The deadline is
// 3 s: on two loaded cores 1 s could pass before the child reached krusty.
func TestTimeoutAndCancelEndKrusty(t *testing.T) {
	root := slowKustomization(t, 4000)
	for _, how := range []string{"timeout", "cancel"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			args := []string{"render", "--root", root, "--hash", filepath.Join(root, "app")}
			if how == "timeout" {
				args = append([]string{"--timeout", "3s"}, args...)
			} else {
				time.AfterFunc(3*time.Second, cancel)
			}
			start := time.Now()
			var out, errb bytes.Buffer
			code := run(ctx, args, &out, &errb)
			took := time.Since(start)
			if took > 20*time.Second {
				t.Errorf("the render ended after %v", took)
			}
			if code != exitcode.Internal && code != exitcode.Pending {
				t.Errorf("exit %d, want %d or %d: %s", code, exitcode.Internal, exitcode.Pending, errb.String())
			}
			if !strings.Contains(errb.String(), "app/kustomization.yaml") {
				t.Errorf("the message does not name the kustomization: %s", errb.String())
			}
			if left := renderChildren(t); len(left) > 0 {
				t.Errorf("render children left behind: %q", left)
			}
			t.Logf("ended after %v: %s", took, strings.TrimSpace(errb.String()))
		})
	}
}

// TestMemoryBudget: a render child that grows past its memory budget is
// reported as invalid input naming the kustomization; the parent goes on.
func TestMemoryBudget(t *testing.T) {
	root := slowKustomization(t, 3000)
	saved := *renderWorker
	renderWorker.MemoryLimit = 64 << 20
	defer func() { *renderWorker = saved }()
	r := runCLI(t, "render", "--root", root, "--hash", filepath.Join(root, "app"))
	if r.code != exitcode.Invalid || !strings.Contains(r.stderr, "app/kustomization.yaml: render exceeded its memory budget") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	if left := renderChildren(t); len(left) > 0 {
		t.Errorf("render children left behind: %q", left)
	}
	*renderWorker = saved
	if ok := runCLI(t, "render", "--root", exampleRepo, "--hash", exampleOverlay("dev")); ok.code != exitcode.OK {
		t.Errorf("render after the child died: exit %d: %s", ok.code, ok.stderr)
	}
}

// TestCMPCacheHitStartsNoChild: a cache hit of cmp generate renders
// nothing, so it starts no render child (one that cannot start would fail
// the command).
func TestCMPCacheHitStartsNoChild(t *testing.T) {
	repo := copyTree(t, exampleRepo)
	rel := "apps/checkout/overlays/staging"
	t.Chdir(filepath.Join(repo, rel))
	t.Setenv("ARGOCD_APP_NAME", "checkout-staging")
	t.Setenv("ARGOCD_APP_SOURCE_PATH", rel)
	t.Setenv("PARAM_ENVIRONMENT", "staging")
	cacheDir := t.TempDir()
	if r := runCLI(t, "cmp", "generate", "--cache-dir", cacheDir); r.code != exitcode.OK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	saved := *renderWorker
	renderWorker.Path = filepath.Join(t.TempDir(), "no-such-binary")
	defer func() { *renderWorker = saved }()
	if r := runCLI(t, "cmp", "generate", "--cache-dir", cacheDir); r.code != exitcode.OK || !strings.Contains(r.stderr, "cached=true") {
		t.Errorf("cache hit: exit %d: %s", r.code, r.stderr)
	}
	if r := runCLI(t, "cmp", "generate", "--no-cache"); r.code == exitcode.OK || !strings.Contains(r.stderr, "no-such-binary") {
		t.Errorf("without the cache the render must start the child: exit %d: %s", r.code, r.stderr)
	}
}
