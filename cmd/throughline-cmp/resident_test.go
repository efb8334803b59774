package main

import (
	"bytes"
	endian "encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/cmp/resident"
	"github.com/throughline-dev/throughline/internal/benchfixture"
)

// throughlineBinary is the throughline the tests built (the resident
// renderer's binary), beside throughline-cmp, with the same version.
func throughlineBinary(t *testing.T) string { return filepath.Join(binaries(t), "throughline") }

func privateDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tlr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestResidentThroughBinaries: the shipped binaries, as the sidecar runs
// them: throughline cmp serve, and throughline-cmp generate with
// THROUGHLINE_RESIDENT_DIR printing what it prints in-process; the second
// render a hit, counted on /metrics; after SIGTERM the socket is gone and
// generate renders in-process with one warning line.
func TestResidentThroughBinaries(t *testing.T) {
	plugin, full := binary(t), throughlineBinary(t)
	dir, metrics := privateDir(t), freePort(t)
	home := t.TempDir()
	serve := exec.Command(full, "cmp", "serve", "--dir", dir, "--metrics-addr", metrics, "--cache-dir", t.TempDir())
	serve.Env = append(os.Environ(), "HOME="+home)
	var serveLog bytes.Buffer
	serve.Stderr = &serveLog
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = serve.Process.Kill(); _ = serve.Wait() })
	waitFor(t, "the socket", func() bool { return exists(resident.SocketPath(dir)) })

	repo, err := filepath.Abs("../../examples/gitops-env")
	if err != nil {
		t.Fatal(err)
	}
	const app = "apps/checkout/overlays/staging"
	generate := func(extraEnv ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(plugin, "generate")
		cmd.Dir = filepath.Join(repo, app)
		cmd.Env = append(append(os.Environ(), "HOME="+home, "ARGOCD_APP_NAME=checkout", "ARGOCD_APP_SOURCE_PATH="+app,
			"ARGOCD_APP_NAMESPACE=checkout-staging", "ARGOCD_ENV_ENVIRONMENT=staging"), extraEnv...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("throughline-cmp generate: %v: %s", err, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	want, _ := generate("THROUGHLINE_CACHE_DIR=" + t.TempDir())
	for i := range 2 {
		got, stderr := generate("THROUGHLINE_RESIDENT_DIR=" + dir)
		if got != want {
			t.Fatalf("render %d through the resident renderer differs from in-process:\n%s\nvs\n%s", i, got, want)
		}
		if strings.Contains(stderr, "in-process") || !strings.Contains(stderr, "resident=true") {
			t.Errorf("render %d did not go through the resident renderer: %s", i, stderr)
		}
	}
	res, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	for _, w := range []string{"throughline_cmp_cache_hits_total 1", "throughline_cmp_cache_misses_total 1",
		`throughline_cmp_generate_duration_seconds_count{result="hit"} 1`, `throughline_cmp_generate_duration_seconds_count{result="render"} 1`,
		"throughline_cmp_memory_cache_entries 1"} {
		if !strings.Contains(string(body), w) {
			t.Errorf("/metrics lacks %q", w)
		}
	}
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := serve.Wait(); err != nil {
		t.Errorf("cmp serve after SIGTERM: %v: %s", err, serveLog.String())
	}
	if exists(resident.SocketPath(dir)) {
		t.Error("cmp serve left its socket after SIGTERM")
	}
	got, stderr := generate("THROUGHLINE_RESIDENT_DIR=" + dir)
	if got != want {
		t.Error("the in-process fallback differs")
	}
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 2 || !strings.Contains(lines[0], "rendering in-process") {
		t.Errorf("want one warning saying it renders in-process, then the render's line; got %q", stderr)
	}
}

// TestSidecarEndsWithResident: throughline cmp sidecar runs cmp serve and
// the command after --, with THROUGHLINE_RESIDENT_DIR set for it; a
// SIGKILL of the resident renderer ends the sidecar, stops the other
// process and leaves no socket. A socket directory others can enter is
// refused before anything starts.
func TestSidecarEndsWithResident(t *testing.T) {
	full := throughlineBinary(t)
	dir := privateDir(t)
	marker := filepath.Join(t.TempDir(), "env")
	sidecar := exec.Command(full, "cmp", "sidecar", "--dir", dir, "--metrics-addr", "", "--cache-dir", t.TempDir(), "--",
		"sh", "-c", `echo "$THROUGHLINE_RESIDENT_DIR" > `+marker+`; exec sleep 120`)
	var log bytes.Buffer
	sidecar.Stderr = &log
	if err := sidecar.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sidecar.Process.Kill(); _ = sidecar.Wait() })
	waitFor(t, "the socket", func() bool { return exists(resident.SocketPath(dir)) })
	waitFor(t, "the command's environment", func() bool { b, _ := os.ReadFile(marker); return len(b) > 0 })
	if b, _ := os.ReadFile(marker); strings.TrimSpace(string(b)) != dir {
		t.Errorf("the command got THROUGHLINE_RESIDENT_DIR=%q, want %s", b, dir)
	}
	servePid, others := 0, []int{}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", sidecar.Process.Pid))
	for _, p := range tasks {
		b, _ := os.ReadFile(p)
		for _, f := range strings.Fields(string(b)) {
			var pid int
			_, _ = fmt.Sscan(f, &pid)
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if strings.Contains(string(cmdline), "cmp\x00serve") {
				servePid = pid
			} else {
				others = append(others, pid)
			}
		}
	}
	if servePid == 0 || len(others) != 1 {
		t.Skipf("cannot find the sidecar's children in /proc (%v, %v)", servePid, others)
	}
	if err := syscall.Kill(servePid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sidecar.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Errorf("sidecar after its resident renderer was killed: %v, want a non-zero exit", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the sidecar did not end after its resident renderer was killed: %s", log.String())
	}
	if exists(resident.SocketPath(dir)) {
		t.Error("stale socket left after the resident renderer was killed")
	}
	if err := syscall.Kill(others[0], 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the other process (pid %d) still runs: %v", others[0], err)
	}

	open := privateDir(t)
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(full, "cmp", "sidecar", "--dir", open, "--", "sh", "-c", "exit 0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "accessible to group or others") {
		t.Errorf("sidecar on a 0755 directory: %v: %s", err, out)
	}
	if exists(resident.SocketPath(open)) {
		t.Error("a socket was created in a refused directory")
	}
}

// runPlugin runs bin with args in dir with the test's environment plus
// env and returns stdout, stderr and the exit code.
func runPlugin(t *testing.T, bin, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("running %s: %v", bin, err)
		}
		code = ee.ExitCode()
	}
	return stdout.String(), stderr.String(), code
}

// exampleApp is the staging app of the example repository: its directory
// and the plugin environment Argo CD gives it.
func exampleApp(t *testing.T) (string, []string) {
	t.Helper()
	repo, err := filepath.Abs("../../examples/gitops-env")
	if err != nil {
		t.Fatal(err)
	}
	const app = "apps/checkout/overlays/staging"
	return filepath.Join(repo, app), []string{"HOME=" + t.TempDir(), "ARGOCD_APP_NAME=checkout", "ARGOCD_APP_SOURCE_PATH=" + app,
		"ARGOCD_APP_NAMESPACE=checkout-staging", "ARGOCD_ENV_ENVIRONMENT=staging", "THROUGHLINE_CACHE_DIR=" + t.TempDir()}
}

// TestWithoutResident: with no resident renderer configured, throughline-cmp
// is throughline-cmp-render: the same stdout, stderr and exit code for a
// render, a refusal, usage errors (also with a resident renderer set: the
// renderer reports them) and the help; version, help and a missing command
// it answers itself. Without throughline-cmp-render beside it, it says so
// and exits 1 with nothing on stdout.
func TestWithoutResident(t *testing.T) {
	dir := binaries(t)
	plugin, renderer := filepath.Join(dir, "throughline-cmp"), filepath.Join(dir, "throughline-cmp-render")
	wd, env := exampleApp(t)
	cases := []struct {
		name     string
		env      []string
		args     []string
		wantCode int
	}{
		{name: "renders", args: []string{"generate", "--no-cache", "--log-level", "error"}},
		{name: "refused", env: []string{"ARGOCD_ENV_ENVIRONMENT=production"}, args: []string{"generate", "--no-cache"}, wantCode: 3},
		{name: "unknown flag", args: []string{"generate", "--no-such-flag"}, wantCode: 2},
		{name: "an argument", args: []string{"generate", "."}, wantCode: 2},
		{name: "bad log level", args: []string{"generate", "--log-level", "loud"}, wantCode: 2},
		{name: "bad log level with a resident renderer", env: []string{"THROUGHLINE_RESIDENT_DIR=/nonexistent"},
			args: []string{"generate", "--log-level", "loud"}, wantCode: 2},
		{name: "bad log format with a resident renderer", args: []string{"generate", "--resident-dir", "/nonexistent", "--log-format", "xml"},
			wantCode: 2},
		{name: "generate help", args: []string{"generate", "--help"}},
		{name: "unknown command", args: []string{"frob"}, wantCode: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := append(append([]string{}, env...), tc.env...)
			out, errOut, code := runPlugin(t, plugin, wd, e, tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.wantCode, errOut)
			}
			wantOut, wantErr, wantCode := runPlugin(t, renderer, wd, e, tc.args...)
			wantOut = strings.ReplaceAll(wantOut, "throughline-cmp-render", "throughline-cmp")
			wantErr = strings.ReplaceAll(wantErr, "throughline-cmp-render", "throughline-cmp")
			if out != wantOut || errOut != wantErr || code != wantCode {
				t.Errorf("throughline-cmp: exit %d, stderr %q, stdout %.300q\nthroughline-cmp-render: exit %d, stderr %q, stdout %.300q",
					code, errOut, out, wantCode, wantErr, wantOut)
			}
			if code == 0 && tc.args[0] == "generate" && len(out) == 0 && !strings.Contains(strings.Join(tc.args, " "), "help") {
				t.Error("exit 0 with no manifests")
			}
		})
	}
	out, _, code := runPlugin(t, plugin, wd, nil, "version")
	if code != 0 || strings.TrimSpace(out) != testVersion {
		t.Errorf("version: exit %d, %q", code, out)
	}
	out, _, code = runPlugin(t, plugin, wd, nil, "--help")
	if code != 0 || !strings.Contains(out, "throughline-cmp generate [flags]") {
		t.Errorf("--help: exit %d, %q", code, out)
	}
	_, errOut, code := runPlugin(t, plugin, wd, nil)
	if code != 2 || !strings.Contains(errOut, "usage error: throughline-cmp needs a command") {
		t.Errorf("no command: exit %d, %q", code, errOut)
	}

	alone := filepath.Join(t.TempDir(), "throughline-cmp")
	data, err := os.ReadFile(plugin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range [][]string{nil, {"THROUGHLINE_RESIDENT_DIR=" + t.TempDir()}} {
		out, errOut, code = runPlugin(t, alone, wd, append(append([]string{}, env...), e...), "generate")
		if code != 1 || out != "" || !strings.Contains(errOut, "running the in-process renderer") ||
			!strings.Contains(errOut, "throughline-cmp-render") {
			t.Errorf("no renderer beside it (%v): exit %d, stdout %q, stderr %q", e, code, out, errOut)
		}
	}
}

// fakeResident serves one answer per connection on the socket of a fresh
// private directory, as a hostile or broken resident renderer would.
func fakeResident(t *testing.T, answer func(c net.Conn)) string {
	t.Helper()
	dir := privateDir(t)
	ln, err := net.Listen("unix", resident.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close() //nolint:errcheck // a test server
				// The request first, as a real server reads it.
				var n [4]byte
				if _, err := io.ReadFull(c, n[:]); err != nil {
					return
				}
				if _, err := io.CopyN(io.Discard, c, int64(endian.BigEndian.Uint32(n[:]))); err != nil {
					return
				}
				answer(c)
			}()
		}
	}()
	return dir
}

// frame is one frame of the protocol: the 4-byte length, then body.
func frame(body []byte) []byte {
	var n [4]byte
	endian.BigEndian.PutUint32(n[:], uint32(len(body)))
	return append(n[:], body...)
}

// TestFallbackFromBrokenResident: whatever the resident renderer does short
// of a well-formed answer (no socket, a file or a directory in its place,
// a stale socket, silence past --resident-timeout, a broken header, an
// internal error, or dying after half the manifests), throughline-cmp
// prints the correct render, byte for byte the in-process one, with one
// warning line saying it renders in-process and nothing of the broken
// answer on stdout. A refusal it answers is printed as it is, with its
// exit code, and the renderer is not run.
func TestFallbackFromBrokenResident(t *testing.T) {
	plugin := binary(t)
	wd, env := exampleApp(t)
	want, _, code := runPlugin(t, plugin, wd, env, "generate", "--log-level", "error")
	if code != 0 || want == "" {
		t.Fatalf("in-process render: exit %d", code)
	}
	header := func(code int, stderr string) []byte {
		return frame([]byte(fmt.Sprintf(`{"version":%d,"code":%d,"stderr":%q,"app":"forged","objects":1}`, resident.ProtocolVersion, code, stderr)))
	}
	forged := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"forged"}}` + "\n")
	cases := []struct {
		name  string
		dir   func(t *testing.T) string
		args  []string
		extra string // in the warning
	}{
		{name: "no socket", dir: privateDir},
		{name: "a regular file in its place", dir: func(t *testing.T) string {
			d := privateDir(t)
			if err := os.WriteFile(resident.SocketPath(d), []byte("not a socket"), 0o600); err != nil {
				t.Fatal(err)
			}
			return d
		}},
		{name: "a directory in its place", dir: func(t *testing.T) string {
			d := privateDir(t)
			if err := os.Mkdir(resident.SocketPath(d), 0o700); err != nil {
				t.Fatal(err)
			}
			return d
		}},
		{name: "a stale socket", dir: func(t *testing.T) string {
			d := privateDir(t)
			ln, err := net.Listen("unix", resident.SocketPath(d))
			if err != nil {
				t.Fatal(err)
			}
			ln.(*net.UnixListener).SetUnlinkOnClose(false)
			_ = ln.Close()
			return d
		}},
		{name: "silent past the timeout", args: []string{"--resident-timeout", "1s"}, extra: "no answer within 1s",
			dir: func(t *testing.T) string { return fakeResident(t, func(c net.Conn) { time.Sleep(5 * time.Second) }) }},
		{name: "a broken header", dir: func(t *testing.T) string {
			return fakeResident(t, func(c net.Conn) { _, _ = c.Write(frame([]byte("{not json"))) })
		}},
		{name: "an internal error", extra: "the resident renderer failed", dir: func(t *testing.T) string {
			return fakeResident(t, func(c net.Conn) { _, _ = c.Write(append(header(1, "error: boom\n"), frame(nil)...)) })
		}},
		{name: "dead after half the manifests", dir: func(t *testing.T) string {
			return fakeResident(t, func(c net.Conn) {
				body := bytes.Repeat(forged, 100)
				_, _ = c.Write(header(0, ""))
				_, _ = c.Write(frame(body)[:4+len(body)/2])
			})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			// The directory as the sidecar gives it: in the environment,
			// which the renderer reads too.
			args := append([]string{"generate", "--log-level", "warn"}, tc.args...)
			out, errOut, code := runPlugin(t, plugin, wd, append(env, "THROUGHLINE_RESIDENT_DIR="+dir), args...)
			if code != 0 || out != want {
				t.Fatalf("exit %d, stderr %q, the in-process render on stdout: %v\n%.400s", code, errOut, out == want, out)
			}
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], "rendering in-process") || !strings.Contains(lines[0], tc.extra) {
				t.Errorf("want one warning line saying it renders in-process (%q), got %q", tc.extra, errOut)
			}
		})
	}

	t.Run("a refusal", func(t *testing.T) {
		const refusal = "refused: the resident renderer says no\n"
		dir := fakeResident(t, func(c net.Conn) { _, _ = c.Write(append(header(3, refusal), frame(nil)...)) })
		out, errOut, code := runPlugin(t, plugin, wd, env, "generate", "--resident-dir", dir)
		if code != 3 || out != "" || errOut != refusal {
			t.Errorf("exit %d, stdout %q, stderr %q; want 3, nothing, %q", code, out, errOut, refusal)
		}
	})
	t.Run("a render", func(t *testing.T) {
		dir := fakeResident(t, func(c net.Conn) { _, _ = c.Write(append(header(0, ""), frame(forged)...)) })
		out, errOut, code := runPlugin(t, plugin, wd, env, "generate", "--resident-dir", dir)
		if code != 0 || out != string(forged) || !strings.Contains(errOut, "resident=true") || !strings.Contains(errOut, "app=forged") {
			t.Errorf("exit %d, stdout %q, stderr %q; want the resident renderer's answer", code, out, errOut)
		}
	})
}

// TestResidentKilledMidRender: the real resident renderer (throughline cmp
// serve) killed with SIGKILL while its render child runs a 500-Deployment
// render for throughline-cmp leaves it with the correct render (the
// in-process one, byte for byte), one warning line and nothing else on
// stdout.
func TestResidentKilledMidRender(t *testing.T) {
	plugin, full := binary(t), throughlineBinary(t)
	root := t.TempDir()
	app := benchfixture.WriteOverlay(t, root, 500)
	wd := filepath.Join(root, filepath.FromSlash(app))
	env := []string{"HOME=" + t.TempDir(), "ARGOCD_APP_NAME=bench-production", "ARGOCD_APP_SOURCE_PATH=" + app}
	want, errOut, code := runPlugin(t, plugin, wd, env, "generate", "--no-cache", "--log-level", "error")
	if code != 0 || want == "" {
		t.Fatalf("in-process render: exit %d: %s", code, errOut)
	}
	dir := privateDir(t)
	serve := exec.Command(full, "cmp", "serve", "--dir", dir, "--metrics-addr", "", "--cache-dir", t.TempDir())
	serve.Env = append(os.Environ(), "HOME="+t.TempDir())
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = serve.Process.Kill(); _ = serve.Wait() })
	waitFor(t, "the socket", func() bool { return exists(resident.SocketPath(dir)) })
	sawChild := make(chan bool, 1)
	go func() {
		saw := waitRenderChild(serve.Process.Pid)
		_ = serve.Process.Kill()
		sawChild <- saw
	}()
	out, errOut, code := runPlugin(t, plugin, wd, append(env, "THROUGHLINE_RESIDENT_DIR="+dir), "generate", "--no-cache", "--log-level", "warn")
	if !<-sawChild {
		t.Fatal("the resident renderer was not seen rendering (no render child in /proc)")
	}
	if code != 0 || out != want {
		t.Fatalf("after the resident renderer was killed mid-render: exit %d, stderr %q, the in-process render on stdout: %v",
			code, errOut, out == want)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "rendering in-process") {
		t.Errorf("want one warning line saying it renders in-process, got %q", errOut)
	}
}

// waitRenderChild waits up to 30 s for the process pid to have a child (the
// render child of a resident renderer) and reports whether it saw one.
func waitRenderChild(pid int) bool {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		if err != nil || len(tasks) == 0 {
			return false
		}
		for _, p := range tasks {
			if b, err := os.ReadFile(p); err == nil && len(strings.TrimSpace(string(b))) > 0 {
				return true
			}
		}
	}
	return false
}

// TestClientGivesUp: a generate that runs out of --timeout, or is told to
// stop (SIGTERM, as the cmp-server does at its own deadline), while the
// resident renderer has not answered ends at once with exit 1, nothing on
// stdout, and does not start an in-process render it would have no time
// for.
func TestClientGivesUp(t *testing.T) {
	plugin := binary(t)
	wd, env := exampleApp(t)
	dir := fakeResident(t, func(c net.Conn) { time.Sleep(20 * time.Second) })
	env = append(env, "THROUGHLINE_RESIDENT_DIR="+dir)
	cases := []struct {
		name   string
		args   []string
		signal bool
		want   string
	}{
		{name: "out of --timeout", args: []string{"--timeout", "1s"}, want: "context deadline exceeded"},
		{name: "SIGTERM", signal: true, want: "terminated signal received"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(plugin, append([]string{"generate", "--log-level", "warn"}, tc.args...)...)
			cmd.Dir, cmd.Env = wd, append(os.Environ(), env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if tc.signal {
				time.Sleep(500 * time.Millisecond)
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit %v, want 1; stderr %q", err, stderr.String())
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("ended after %s", took)
			}
			if stdout.Len() > 0 {
				t.Errorf("output on stdout: %.200q", stdout.String())
			}
			// One warning naming the reason, the error, no render.
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 2 || !strings.Contains(lines[0], tc.want) || strings.Contains(lines[0], "no answer within") ||
				lines[1] != "error: rendering: "+tc.want {
				t.Errorf("stderr %q: want one warning and the error, both naming %q", stderr.String(), tc.want)
			}
		})
	}
}
