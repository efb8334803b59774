package resident_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/cmp/resident"
)

// shortDir is a private directory with a path short enough for a unix
// socket (t.TempDir's can pass 108 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tlr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// TestCheckDirRefuses: the socket's directory must be a real directory of
// the current user closed to group and others.
func TestCheckDirRefuses(t *testing.T) {
	base := shortDir(t)
	mk := func(name string, mode fs.FileMode) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		dir  func() string
		want error
	}{
		{"group-readable", func() string { return mk("g", 0o750) }, resident.ErrDirAccessible},
		{"world-enterable", func() string { return mk("w", 0o701) }, resident.ErrDirAccessible},
		{"world-writable", func() string { return mk("ww", 0o777) }, resident.ErrDirAccessible},
		{"symlink", func() string {
			p := filepath.Join(base, "link")
			if err := os.Symlink(mk("target", 0o700), p); err != nil {
				t.Fatal(err)
			}
			return p
		}, resident.ErrDirSymlink},
		{"a file", func() string {
			p := filepath.Join(base, "file")
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, resident.ErrDirNotDir},
		{"another user's", func() string {
			p := mk("other", 0o700)
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a directory away")
			}
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return p
		}, resident.ErrDirOwner},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir()
			l, err := resident.Listen(context.Background(), dir)
			if !errors.Is(err, tc.want) {
				if l != nil {
					_ = l.Close()
				}
				t.Fatalf("Listen(%s) = %v, want %v", dir, err, tc.want)
			}
			if _, err := os.Lstat(resident.SocketPath(dir)); err == nil {
				t.Error("a socket was created in a refused directory")
			}
		})
	}
	t.Run("missing is created 0700", func(t *testing.T) {
		dir := filepath.Join(base, "new", "dir")
		l, err := resident.Listen(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Close() }()
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("created %v, %v; want mode 0700", fi.Mode(), err)
		}
	})
}

// TestListenStaleSocket: a socket left by a killed process is removed on
// start; a file that is not a socket is not.
func TestListenStaleSocket(t *testing.T) {
	dir := shortDir(t)
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", resident.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = ln.Close() // as a SIGKILL leaves it
	l, err := resident.Listen(context.Background(), dir)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	fi, err := os.Stat(l.Socket())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket %v, %v; want mode 0600", fi.Mode(), err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(l.Socket()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Close left the socket: %v", err)
	}
	if err := os.WriteFile(resident.SocketPath(dir), []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := resident.Listen(context.Background(), dir); err == nil {
		_ = l.Close()
		t.Fatal("Listen replaced a regular file")
	}
}

// TestServeShutdown: a render in flight when the server stops gets no
// answer (its client falls back: *UnavailableError), and the socket is
// removed.
func TestServeShutdown(t *testing.T) {
	dir := shortDir(t)
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := resident.Listen(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var inFlight atomic.Bool
	srv := &resident.Server{Handler: func(ctx context.Context, req resident.Request) *resident.Response {
		inFlight.Store(true)
		<-ctx.Done()
		return &resident.Response{Code: 1, Stderr: "error: interrupted\n"}
	}}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, l) }()
	go func() {
		for !inFlight.Load() {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	_, err = (&resident.Client{Dir: dir, Timeout: 10 * time.Second}).Generate(context.Background(), resident.Request{WorkDir: "/x"})
	var ue *resident.UnavailableError
	if !errors.As(err, &ue) {
		t.Fatalf("client of a stopped server: %v, want an *UnavailableError", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := os.Lstat(resident.SocketPath(dir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket left after shutdown: %v", err)
	}
}

// TestServeRefusesHostileRequests: a request above its cap or garbage
// gets no answer and costs the server nothing; the next client is served.
func TestServeRefusesHostileRequests(t *testing.T) {
	dir := shortDir(t)
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := resident.Listen(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var fails atomic.Int32
	var calls atomic.Int32
	srv := &resident.Server{
		ReadTimeout: 500 * time.Millisecond,
		Handler: func(_ context.Context, req resident.Request) *resident.Response {
			calls.Add(1)
			return &resident.Response{Manifests: []byte("kind: ConfigMap\n"), App: req.WorkDir}
		},
		OnError: func(error) { fails.Add(1) },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Serve(ctx, l) }()
	for _, raw := range [][]byte{frame(0xffffffff, "{"), []byte("GET / HTTP/1.1\r\n\r\n"), frame(4, "{]]}"), frame(100, "{}")} {
		c, err := net.Dial("unix", l.Socket())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write(raw)
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		n, _ := c.Read(make([]byte, 16))
		_ = c.Close()
		if n != 0 {
			t.Errorf("request %q got an answer", raw)
		}
	}
	res, err := (&resident.Client{Dir: dir}).Generate(context.Background(), resident.Request{WorkDir: "/app"})
	if err != nil || res.App != "/app" || string(res.Manifests) != "kind: ConfigMap\n" {
		t.Fatalf("after hostile requests: %+v, %v", res, err)
	}
	if calls.Load() != 1 || fails.Load() != 4 {
		t.Errorf("%d handler calls, %d failed connections; want 1 and 4", calls.Load(), fails.Load())
	}
}

// TestServeHandlerPanics: a handler that panics costs its client an
// *UnavailableError (it falls back), not the server: the next request is
// served.
func TestServeHandlerPanics(t *testing.T) {
	dir := shortDir(t)
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := resident.Listen(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var fails atomic.Int32
	srv := &resident.Server{
		Handler: func(_ context.Context, req resident.Request) *resident.Response {
			if req.WorkDir == "/panic" {
				panic("boom")
			}
			return &resident.Response{Manifests: []byte("kind: ConfigMap\n")}
		},
		OnError: func(error) { fails.Add(1) },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Serve(ctx, l) }()
	c := &resident.Client{Dir: dir}
	var ue *resident.UnavailableError
	if _, err := c.Generate(context.Background(), resident.Request{WorkDir: "/panic"}); !errors.As(err, &ue) {
		t.Fatalf("a panicking handler: %v, want an *UnavailableError", err)
	}
	if res, err := c.Generate(context.Background(), resident.Request{WorkDir: "/ok"}); err != nil || res.Code != 0 {
		t.Fatalf("after a panic: %+v, %v", res, err)
	}
	if fails.Load() != 1 {
		t.Errorf("%d failures reported, want the panic", fails.Load())
	}
}
