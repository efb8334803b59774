package resident_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/throughline-dev/throughline/cmp/resident"
)

// TestSocketAppearsListening dials the socket's path without pause while
// the resident renderer starts and stops, as the plugin does when the
// sidecar restarts: whenever the path exists the dial must be answered,
// and the socket is never seen with a mode other than 0600. Before, the
// path existed from bind on, before listen and before the chmod: a dial
// in between was refused (the plugin then rendered in process, needlessly)
// and the socket was briefly open to the umask's mode.
func TestSocketAppearsListening(t *testing.T) {
	dir := shortDir(t)
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	socket := resident.SocketPath(dir)
	var stop atomic.Bool
	var refused, wrongMode, dials atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			before := inode(socket)
			if fi, err := os.Lstat(socket); err == nil && fi.Mode().Perm() != 0o600 {
				wrongMode.Add(1)
			}
			c, err := net.Dial("unix", socket)
			switch {
			case err == nil:
				dials.Add(1)
				_ = c.Close()
			case errors.Is(err, syscall.ECONNREFUSED):
				// Refused by the one socket the path named before and
				// after the dial: bound, and not listening.
				if before != 0 && inode(socket) == before {
					refused.Add(1)
				}
			case errors.Is(err, fs.ErrNotExist):
			}
		}
	}()
	for range 2000 {
		l, err := resident.Listen(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	<-done
	t.Logf("%d dials answered", dials.Load())
	if n := refused.Load(); n > 0 {
		t.Errorf("%d dials refused while the socket's path existed", n)
	}
	if n := wrongMode.Load(); n > 0 {
		t.Errorf("the socket was seen %d times with a mode other than 0600", n)
	}
}

// inode is the inode of the file at p, 0 when there is none.
func inode(p string) uint64 {
	fi, err := os.Lstat(p)
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// TestCloseLeavesTheNextSocket: a second resident renderer that took the
// path over (a restarted sidecar whose old process is still stopping)
// keeps it when the first closes.
func TestCloseLeavesTheNextSocket(t *testing.T) {
	dir := shortDir(t)
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	first, err := resident.Listen(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	second, err := resident.Listen(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = second.Close() }()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("unix", second.Socket())
	if err != nil {
		t.Fatalf("the second renderer's socket is gone with the first: %v", err)
	}
	_ = c.Close()
}

// TestListenAtThePathLimit: a directory whose socket path is as long as a
// unix socket's address allows still listens (the temporary name the
// socket is bound under is never longer than the final one).
func TestListenAtThePathLimit(t *testing.T) {
	base := shortDir(t)
	// sun_path holds 108 bytes with its terminating NUL.
	pad := 107 - len(base) - len("/") - len("/"+resident.SocketName)
	if pad < 1 {
		t.Fatalf("temporary directory %s too long for the test", base)
	}
	dir := base + "/" + strings.Repeat("d", pad)
	if err := resident.CheckDir(dir); err != nil {
		t.Fatal(err)
	}
	if n := len(resident.SocketPath(dir)); n != 107 {
		t.Fatalf("socket path of %d bytes, want 107", n)
	}
	l, err := resident.Listen(context.Background(), dir)
	if err != nil {
		t.Fatalf("Listen at the path limit: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
