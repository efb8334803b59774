package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/cmp/resident"
)

var fullBuild struct {
	once sync.Once
	bin  string
	err  error
}

// throughlineBinary builds throughline (the resident renderer's binary)
// beside throughline-cmp, with the same version.
func throughlineBinary(t *testing.T) string {
	t.Helper()
	bin := binary(t)
	fullBuild.once.Do(func() {
		fullBuild.bin = filepath.Join(filepath.Dir(bin), "throughline")
		cmd := exec.Command(goTool(t), "build", "-trimpath", "-ldflags", "-X main.version="+testVersion, "-o", fullBuild.bin,
			"github.com/throughline-dev/throughline/cmd/throughline")
		cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			fullBuild.err = errors.New(string(out))
		}
	})
	if fullBuild.err != nil {
		t.Fatalf("building throughline: %v", fullBuild.err)
	}
	return fullBuild.bin
}

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
