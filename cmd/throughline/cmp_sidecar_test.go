package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestSuperviseEndsWithEither: when one of the sidecar's processes ends,
// supervise stops the other (SIGTERM), runs the cleanup (the socket) and
// returns why; when its context ends (SIGTERM to the sidecar), it stops
// both and returns nil.
func TestSuperviseEndsWithEither(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	t.Run("one exits", func(t *testing.T) {
		long := exec.Command(sh, "-c", "exec sleep 60")
		short := exec.Command(sh, "-c", "sleep 0.2; exit 3")
		cleaned := false
		start := time.Now()
		err := supervise(context.Background(), zerolog.Nop(), []*exec.Cmd{long, short}, 5*time.Second, func() { cleaned = true })
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(err.Error(), "ended") {
			t.Fatalf("supervise = %v, want the exit 3 of the short process", err)
		}
		if !cleaned {
			t.Error("cleanup not run")
		}
		if long.ProcessState == nil || long.ProcessState.Exited() {
			t.Errorf("the long process was not stopped by a signal: %v", long.ProcessState)
		}
		if took := time.Since(start); took > 4*time.Second {
			t.Errorf("took %s: the other process was not stopped at once", took)
		}
	})
	t.Run("one is killed", func(t *testing.T) {
		long := exec.Command(sh, "-c", "exec sleep 60")
		victim := exec.Command(sh, "-c", "sleep 0.2; kill -9 $$")
		cleaned := false
		err := supervise(context.Background(), zerolog.Nop(), []*exec.Cmd{long, victim}, 5*time.Second, func() { cleaned = true })
		if err == nil || !strings.Contains(err.Error(), "killed") || !cleaned {
			t.Fatalf("supervise = %v, cleanup %v; want the kill named and the cleanup run", err, cleaned)
		}
	})
	t.Run("context ends", func(t *testing.T) {
		a, b := exec.Command(sh, "-c", "exec sleep 60"), exec.Command(sh, "-c", "exec sleep 60")
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if err := supervise(ctx, zerolog.Nop(), []*exec.Cmd{a, b}, 5*time.Second, func() {}); err != nil {
			t.Fatalf("supervise after its context ended = %v, want nil", err)
		}
	})
	t.Run("a command that does not start", func(t *testing.T) {
		a := exec.Command(sh, "-c", "exec sleep 60")
		b := exec.Command("/nonexistent/argocd-cmp-server")
		err := supervise(context.Background(), zerolog.Nop(), []*exec.Cmd{a, b}, 5*time.Second, func() {})
		if err == nil || !strings.Contains(err.Error(), "starting /nonexistent/argocd-cmp-server") {
			t.Fatalf("supervise = %v", err)
		}
	})
}
