package harness

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// residentProcess is throughline cmp serve, as the sidecar runs it beside
// the CMP server (throughline cmp sidecar).
type residentProcess struct {
	cmd *exec.Cmd
	dir string
	log *syncBuffer
}

// startResident starts throughline cmp serve on dir (created 0700) and
// sets THROUGHLINE_RESIDENT_DIR for the CMP server started after it.
func startResident(t testing.TB, bin, dir string) *residentProcess {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		t.Fatal(err)
	}
	r := &residentProcess{dir: dir, log: &syncBuffer{}}
	r.cmd = exec.Command(bin, "cmp", "serve", "--dir", dir, "--metrics-addr", "", "--log-level", "debug", "--log-format", "json")
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	Must(t, r.cmd.Start())
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		if t.Failed() || testing.Verbose() {
			lines := strings.Split(strings.TrimSpace(r.log.String()), "\n")
			t.Logf("throughline cmp serve output (last %d lines):\n%s", min(len(lines), 20), strings.Join(lines[max(0, len(lines)-20):], "\n"))
		}
	})
	t.Setenv("THROUGHLINE_RESIDENT_DIR", dir)
	waitSocket(t, dir, filepath.Join(dir, "render.sock"))
	return r
}

// served is the number of generates the resident renderer answered.
func (r *residentProcess) served() int {
	return strings.Count(r.log.String(), `"message":"generate"`)
}

// check: the generates of Run went through the resident renderer; after
// SIGTERM it is gone with its socket, and after a SIGKILL of a restarted
// one (its socket left behind) the CMP server still returns the correct
// render of staging: the plugin renders in-process.
func (r *residentProcess) check(t *testing.T, ctx context.Context, d Driver, repo, staging, envStaging string) {
	if n := r.served(); n < 5 {
		t.Errorf("the resident renderer answered %d generates, want every generate of the run (at least 5)", n)
	}
	generate := func(t *testing.T) {
		t.Helper()
		got, err := d.Generate(ctx, filepath.Join(repo, staging), repo, repo, "", Env(repo, staging, envStaging), nil)
		Must(t, err)
		checkAccepted(t, got, repo, staging, map[string]string{"environment": "staging"})
	}
	t.Run("SIGTERM: socket removed, the plugin renders in-process", func(t *testing.T) {
		Must(t, r.cmd.Process.Signal(syscall.SIGTERM))
		done := make(chan error, 1)
		go func() { done <- r.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("cmp serve after SIGTERM: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("cmp serve did not stop on SIGTERM")
		}
		if _, err := os.Lstat(filepath.Join(r.dir, "render.sock")); err == nil {
			t.Error("the socket is left after SIGTERM")
		}
		generate(t)
	})
	t.Run("SIGKILL: the stale socket does not stop the render", func(t *testing.T) {
		// A restarted resident renderer, killed: its socket stays, and
		// nobody listens on it.
		again := startResident(t, r.cmd.Path, r.dir)
		Must(t, again.cmd.Process.Kill())
		_ = again.cmd.Wait()
		if _, err := os.Lstat(filepath.Join(r.dir, "render.sock")); err != nil {
			t.Fatalf("no stale socket to test with: %v", err)
		}
		generate(t)
	})
}
