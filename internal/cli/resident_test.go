package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/cmp/resident"
	"github.com/throughline-dev/throughline/internal/benchfixture"
	"github.com/throughline-dev/throughline/render"
)

// serveCommand starts this test binary as a resident renderer
// (testResidentProcess).
const serveCommand = "resident-serve-for-test"

const residentTestVersion = "v0.0.0-resident-test"

// TestMain serves render.WorkerCommand when the test binary is started as
// the render child, and runs a resident renderer when started as
// serveCommand, so these tests run the real child and a real resident
// process.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == serveCommand {
		os.Exit(serveForTest(os.Args[2], os.Args[3]))
	}
	if len(os.Args) > 1 && os.Args[1] == render.WorkerCommand {
		if err := render.ServeWorker(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveForTest is a resident renderer as throughline cmp serve runs it:
// the render child, the in-memory cache over cacheDir; "ready" on stdout
// once it listens.
func serveForTest(dir, cacheDir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	render.UseWorker(&render.Worker{Args: []string{render.WorkerCommand}})
	l, err := resident.Listen(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r := &Resident{Version: residentTestVersion, MaxFileSize: render.DefaultMaxFileSize,
		Cache: &cmp.Cache{Dir: cacheDir, InMemory: true}}
	fmt.Println("ready")
	if err := (&resident.Server{Handler: r.Handle}).Serve(ctx, l); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// useChild renders through the real render child (this test binary) for
// the test.
func useChild(t *testing.T) {
	render.UseWorker(&render.Worker{Args: []string{render.WorkerCommand}})
	t.Cleanup(func() { render.UseWorker(nil) })
}

// socketDir is a fresh private directory with a path short enough for a
// unix socket.
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tlr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// inServer runs a resident renderer in this process on a fresh socket
// directory and returns the directory and a count of the responses.
func inServer(t *testing.T) (string, *atomic.Int32, *atomic.Int32) {
	t.Helper()
	dir := socketDir(t)
	l, err := resident.Listen(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &Resident{Version: residentTestVersion, MaxFileSize: render.DefaultMaxFileSize,
		Cache: &cmp.Cache{Dir: t.TempDir(), InMemory: true}}
	var served, hits atomic.Int32
	srv := &resident.Server{Handler: r.Handle, Observe: func(res *resident.Response, _ time.Duration) {
		served.Add(1)
		if res.CacheHit {
			hits.Add(1)
		}
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ctx, l) }()
	t.Cleanup(func() { cancel(); <-done })
	return dir, &served, &hits
}

var argoKeys = []string{"ARGOCD_APP_NAME", "ARGOCD_APP_NAMESPACE", "ARGOCD_APP_SOURCE_PATH", "ARGOCD_APP_REVISION",
	"ARGOCD_APP_SOURCE_REPO_URL", "ARGOCD_ENV_ENVIRONMENT", "PARAM_ENVIRONMENT", "PARAM_APP", "KUBE_VERSION", EnvResidentDir}

// generateIn runs cmp generate (o.Run) in dir with env as the plugin's
// environment and returns stdout, stderr (ExitCode's), the exit code and
// the log.
func generateIn(t *testing.T, o CMPGenerate, dir string, env []string) (stdout, stderr string, code int, logged string) {
	t.Helper()
	for _, k := range argoKeys {
		t.Setenv(k, "")
		_ = os.Unsetenv(k) // t.Setenv restores it
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Chdir(dir)
	var out, errOut, logBuf bytes.Buffer
	log := zerolog.New(&logBuf).Level(zerolog.WarnLevel)
	err := o.Run(context.Background(), log, residentTestVersion, &out)
	code = ExitCode(err, &errOut)
	if code != 0 {
		out.Reset()
	}
	return out.String(), errOut.String(), code, logBuf.String()
}

// TestResidentSameAsInProcess: through a real resident renderer (real
// render child, socket in a private directory), cmp generate prints what
// it prints in-process, byte for byte, with the same exit code and stderr,
// for renders, refusals and invalid input; a second render of the same app
// is a hit from memory.
func TestResidentSameAsInProcess(t *testing.T) {
	useChild(t)
	dir, served, hits := inServer(t)
	repo, err := filepath.Abs("../../examples/gitops-env")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		env        []string
		wantCode   int
	}{
		{"staging renders", "apps/checkout/overlays/staging", []string{"ARGOCD_APP_NAMESPACE=checkout-staging", "ARGOCD_ENV_ENVIRONMENT=staging"}, 0},
		{"production renders with a parameter", "apps/checkout/overlays/production", []string{"PARAM_ENVIRONMENT=production", "PARAM_APP=checkout"}, 0},
		{"environment parameter disagrees", "apps/checkout/overlays/staging", []string{"ARGOCD_ENV_ENVIRONMENT=production"}, 3},
		{"path of no environment", "apps/checkout/overlays/refused-unpinned", nil, 3},
		{"source path outside the checkout", "apps/checkout/overlays/staging", []string{"ARGOCD_APP_SOURCE_PATH=apps/checkout/overlays/other"}, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{"ARGOCD_APP_NAME=checkout", "ARGOCD_APP_SOURCE_PATH=" + tc.path,
				"ARGOCD_APP_REVISION=0123456789abcdef", "ARGOCD_APP_SOURCE_REPO_URL=https://git.example.test/gitops.git"}, tc.env...)
			wd := filepath.Join(repo, filepath.FromSlash(tc.path))
			o := CMPGenerate{NoCache: true, MaxFileSize: render.DefaultMaxFileSize}
			wantOut, wantErr, wantCode, _ := generateIn(t, o, wd, env)
			before := served.Load()
			o.ResidentDir = dir
			out, errOut, code, logged := generateIn(t, o, wd, env)
			if served.Load() != before+1 {
				t.Fatalf("the resident renderer did not serve the render; log: %s", logged)
			}
			if code != tc.wantCode || code != wantCode || out != wantOut || errOut != wantErr {
				t.Errorf("resident: exit %d, %d bytes, stderr %q\nin-process: exit %d, %d bytes, stderr %q",
					code, len(out), errOut, wantCode, len(wantOut), wantErr)
			}
			if strings.Contains(logged, "in-process") {
				t.Errorf("fell back: %s", logged)
			}
		})
	}
	t.Run("a second render is a hit from memory", func(t *testing.T) {
		env := []string{"ARGOCD_APP_NAME=checkout", "ARGOCD_APP_SOURCE_PATH=apps/checkout/overlays/dev"}
		wd := filepath.Join(repo, "apps/checkout/overlays/dev")
		o := CMPGenerate{ResidentDir: dir, MaxFileSize: render.DefaultMaxFileSize}
		first, _, code, _ := generateIn(t, o, wd, env)
		second, _, code2, _ := generateIn(t, o, wd, env)
		if code != 0 || code2 != 0 || first != second || first == "" {
			t.Fatalf("exit %d then %d; same output %v", code, code2, first == second)
		}
		if hits.Load() != 1 {
			t.Errorf("%d hits, want 1", hits.Load())
		}
	})
}

// TestResidentConfinement: the resident renderer confines a render to the
// directory the client names as in-process: a symbolic link out of the
// repository and a file above the client's size cap are refused with the
// same exit code and message.
func TestResidentConfinement(t *testing.T) {
	useChild(t)
	dir, _, _ := inServer(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "cm.yaml")
	if err := os.WriteFile(secret, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: outside}\ndata: {k: v}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	app := filepath.Join(root, "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "kustomization.yaml"), []byte("resources: [cm.yaml]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(app, "cm.yaml")); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(root, "big")
	if err := os.MkdirAll(big, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(big, "kustomization.yaml"), []byte("resources: [cm.yaml]\n"+strings.Repeat("# pad\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(big, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		maxFile    int64
	}{{"symlink out of the repository", "app", render.DefaultMaxFileSize}, {"file above the client's cap", "big", 200}} {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{"ARGOCD_APP_NAME=a", "ARGOCD_APP_SOURCE_PATH=" + tc.path}
			o := CMPGenerate{NoCache: true, MaxFileSize: tc.maxFile}
			_, wantErr, wantCode, _ := generateIn(t, o, filepath.Join(root, tc.path), env)
			o.ResidentDir = dir
			out, errOut, code, logged := generateIn(t, o, filepath.Join(root, tc.path), env)
			if wantCode == 0 || code != wantCode || errOut != wantErr || out != "" {
				t.Errorf("resident: exit %d, stderr %q, %d bytes out\nin-process: exit %d, stderr %q", code, errOut, len(out), wantCode, wantErr)
			}
			if strings.Contains(logged, "in-process") || strings.Contains(errOut, "outside") && strings.Contains(out, "outside") {
				t.Errorf("log %s", logged)
			}
		})
	}
}

// residentProcess starts this test binary as a resident renderer on dir
// and waits until it listens.
func residentProcess(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, serveCommand, dir, t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("resident process: %q, %v", line, err)
	}
	return cmd
}

// waitRenderChild waits until pid has a child process (the render child
// of a render in flight), reading every thread's children in /proc; false
// when none showed within 30 s or /proc cannot tell.
func waitRenderChild(pid int) bool {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		if err != nil || len(tasks) == 0 {
			return false
		}
		for _, p := range tasks {
			if b, err := os.ReadFile(p); err == nil && len(strings.TrimSpace(string(b))) > 0 {
				return true
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

// TestResidentKilledMidRender: a resident renderer killed while its render
// child runs (SIGKILL, then SIGTERM) leaves cmp generate with the correct
// render (in-process, the same bytes) and one warning line saying so; its
// SIGTERM removes the socket, and after a SIGKILL the next start removes
// the stale one.
func TestResidentKilledMidRender(t *testing.T) {
	useChild(t)
	root := t.TempDir()
	app := benchfixture.WriteOverlay(t, root, 500)
	env := []string{"ARGOCD_APP_NAME=bench-production", "ARGOCD_APP_SOURCE_PATH=" + app}
	wd := filepath.Join(root, filepath.FromSlash(app))
	o := CMPGenerate{NoCache: true, MaxFileSize: render.DefaultMaxFileSize}
	want, _, code, _ := generateIn(t, o, wd, env)
	if code != 0 {
		t.Fatalf("in-process render exit %d", code)
	}
	dir := socketDir(t)
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			srv := residentProcess(t, dir) // after SIGKILL: over the stale socket
			sawChild := make(chan bool, 1)
			go func() {
				saw := waitRenderChild(srv.Process.Pid)
				_ = srv.Process.Signal(sig)
				sawChild <- saw
			}()
			o.ResidentDir = dir
			got, errOut, code, logged := generateIn(t, o, wd, env)
			if code != 0 || got != want {
				t.Fatalf("after the resident renderer got %s mid-render: exit %d, stderr %q, same output %v", sig, code, errOut, got == want)
			}
			lines := strings.Split(strings.TrimSpace(logged), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], "rendering in-process") {
				t.Errorf("want one warning line saying it rendered in-process, got %q", logged)
			}
			if !<-sawChild {
				t.Fatal("the resident renderer was not seen rendering (no render child in /proc)")
			}
			_ = srv.Wait()
			_, err := os.Lstat(resident.SocketPath(dir))
			switch {
			case sig == syscall.SIGTERM && !errors.Is(err, fs.ErrNotExist):
				t.Errorf("the socket is left after SIGTERM: %v", err)
			case sig == syscall.SIGKILL && err != nil:
				t.Logf("no socket after SIGKILL (%v)", err)
			}
		})
	}
}

// TestResidentRenderLimit: with every render slot taken, a miss waits its
// turn (queued, not refused) and renders once a slot is freed, while a
// hit is served at once; a miss whose context ends while it waits renders
// nothing.
func TestResidentRenderLimit(t *testing.T) {
	useChild(t)
	repo, err := filepath.Abs("../../examples/gitops-env")
	if err != nil {
		t.Fatal(err)
	}
	r := &Resident{Version: residentTestVersion, MaxFileSize: render.DefaultMaxFileSize,
		Cache: &cmp.Cache{Dir: t.TempDir(), InMemory: true}, Renders: resident.NewRenderLimit(1)}
	req := func(env string) resident.Request {
		path := "apps/checkout/overlays/" + env
		return resident.Request{WorkDir: filepath.Join(repo, filepath.FromSlash(path)), Environ: []string{
			"ARGOCD_APP_NAME=checkout", "ARGOCD_APP_SOURCE_PATH=" + path, "ARGOCD_APP_NAMESPACE=checkout-" + env,
			"ARGOCD_ENV_ENVIRONMENT=" + env}}
	}
	ctx := context.Background()
	if res := r.Handle(ctx, req("dev")); res.Code != 0 || res.CacheHit {
		t.Fatalf("first render of dev: exit %d, hit %v: %s", res.Code, res.CacheHit, res.Stderr)
	}
	if err := r.Renders.Acquire(ctx); err != nil { // every slot taken
		t.Fatal(err)
	}
	queued := make(chan *resident.Response, 1)
	go func() { queued <- r.Handle(ctx, req("staging")) }()
	for deadline := time.Now().Add(10 * time.Second); r.Renders.Waiting() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the miss never waited for a slot")
		}
	}
	if res := r.Handle(ctx, req("dev")); res.Code != 0 || !res.CacheHit {
		t.Errorf("hit while every slot is taken: exit %d, hit %v", res.Code, res.CacheHit)
	}
	select {
	case res := <-queued:
		t.Fatalf("the miss did not wait for the slot: exit %d", res.Code)
	case <-time.After(200 * time.Millisecond):
	}
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan *resident.Response, 1)
	go func() { gaveUp <- r.Handle(cctx, req("production")) }()
	for deadline := time.Now().Add(10 * time.Second); r.Renders.Waiting() != 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second miss never waited for a slot")
		}
	}
	cancel()
	if res := <-gaveUp; res.Code == 0 || len(res.Manifests) != 0 || !strings.Contains(res.Stderr, "render slots") {
		t.Errorf("miss canceled while waiting: exit %d, %d bytes, stderr %q", res.Code, len(res.Manifests), res.Stderr)
	}
	r.Renders.Release()
	res := <-queued
	if res.Code != 0 || res.CacheHit || len(res.Manifests) == 0 {
		t.Errorf("the queued miss: exit %d, hit %v, %d bytes: %s", res.Code, res.CacheHit, len(res.Manifests), res.Stderr)
	}
	if r.Renders.InFlight() != 0 || r.Renders.Waiting() != 0 {
		t.Errorf("left %d in flight, %d waiting", r.Renders.InFlight(), r.Renders.Waiting())
	}
}
