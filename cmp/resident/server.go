package resident

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Why a socket directory is refused (errors.Is on the error of Listen).
var (
	ErrDirSymlink    = errors.New("is a symbolic link")
	ErrDirNotDir     = errors.New("is not a directory")
	ErrDirAccessible = errors.New("is accessible to group or others")
	ErrDirOwner      = errors.New("is owned by another user")
	ErrPeer          = errors.New("peer is another user")
)

// CheckDir creates dir (0700, with its parents) when missing, then refuses
// it unless it is a real directory owned by the current user that group
// and others can neither read, write nor enter: whoever can reach the
// socket can have the resident renderer render any directory it can read.
func CheckDir(dir string) error {
	if dir == "" {
		return errors.New("no resident renderer directory given")
	}
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating resident renderer directory %s: %w", dir, err)
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return fmt.Errorf("checking resident renderer directory %s: %w", dir, err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("resident renderer directory %s %w", dir, ErrDirSymlink)
	case !fi.IsDir():
		return fmt.Errorf("resident renderer directory %s %w", dir, ErrDirNotDir)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("resident renderer directory %s %w (mode %v, want 0700)", dir, ErrDirAccessible, fi.Mode().Perm())
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Geteuid() {
		return fmt.Errorf("resident renderer directory %s %w (uid %d, not the current user's %d)", dir, ErrDirOwner, uid, os.Geteuid())
	}
	return nil
}

// Listener is the resident renderer's socket. Close removes it.
type Listener struct {
	ln     *net.UnixListener
	socket string
	// placed is the socket file as Listen placed it: Close removes the
	// path only while it is still that file.
	placed fs.FileInfo
}

// Listen checks dir (CheckDir) and listens on SocketPath(dir) (mode
// 0600). The socket is bound, restricted and listening under a temporary
// name first and then renamed over SocketPath(dir), replacing a socket
// left by a process that ended without removing it: the path exists only
// for a socket that answers, never for one that is bound but not yet
// listening or not yet restricted to its user (TestSocketAppearsListening).
func Listen(ctx context.Context, dir string) (*Listener, error) {
	if err := CheckDir(dir); err != nil {
		return nil, err
	}
	socket := SocketPath(dir)
	fi, err := os.Lstat(socket)
	switch {
	case err == nil && fi.Mode().Type() != fs.ModeSocket:
		return nil, fmt.Errorf("%s exists and is not a socket (mode %v): not removed", socket, fi.Mode())
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("checking socket %s: %w", socket, err)
	}
	// The temporary name is never longer than SocketName, so a directory
	// whose socket path just fits a unix address still listens.
	tmp := filepath.Join(dir, "."+strconv.FormatInt(int64(os.Getpid()), 36)+".s")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("removing %s: %w", tmp, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", socket, err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // the socket is renamed: Close removes it
	fail := func(err error) (*Listener, error) {
		_ = ul.Close()
		_ = os.Remove(tmp)
		return nil, err
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fail(fmt.Errorf("restricting socket %s: %w", socket, err))
	}
	placed, err := os.Lstat(tmp)
	if err != nil {
		return fail(fmt.Errorf("checking socket %s: %w", socket, err))
	}
	if err := os.Rename(tmp, socket); err != nil {
		return fail(fmt.Errorf("placing socket %s: %w", socket, err))
	}
	return &Listener{ln: ul, socket: socket, placed: placed}, nil
}

// Socket is the listener's path.
func (l *Listener) Socket() string { return l.socket }

// Close removes the socket and stops listening, in that order: a client
// finds either no socket or one that answers. A socket another resident
// renderer has placed at the path since is left to it.
func (l *Listener) Close() error {
	var err error
	if fi, statErr := os.Lstat(l.socket); statErr == nil && os.SameFile(fi, l.placed) {
		if rmErr := os.Remove(l.socket); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
			err = fmt.Errorf("removing socket %s: %w", l.socket, rmErr)
		}
	}
	return errors.Join(err, l.ln.Close())
}

// Handler renders one request. It returns the response to send; Code and
// Stderr carry a refusal as the plugin would print it.
type Handler func(ctx context.Context, req Request) *Response

// Server defaults.
const (
	DefaultReadTimeout  = 10 * time.Second
	DefaultWriteTimeout = 30 * time.Second
)

// Server serves renders on a Listener.
type Server struct {
	Handler Handler
	// ReadTimeout bounds reading a request, WriteTimeout writing a
	// response (<= 0: the defaults).
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// Observe, when set, is called after each render with its response
	// and how long it took (the command's metrics).
	Observe func(res *Response, took time.Duration)
	// OnError, when set, is told of a connection that failed (a request
	// that did not read, a response that did not write).
	OnError func(err error)
}

// Serve accepts connections until ctx ends, then closes l (removing the
// socket) and returns once every connection is done. A render that
// ctx's end interrupts gets no response: its client renders in-process.
func (s *Server) Serve(ctx context.Context, l *Listener) error {
	var wg sync.WaitGroup
	conns := context.AfterFunc(ctx, func() { _ = l.ln.Close() })
	defer conns()
	var err error
	for {
		c, aerr := l.ln.AcceptUnix()
		if aerr != nil {
			if ctx.Err() == nil {
				err = fmt.Errorf("accepting on %s: %w", l.socket, aerr)
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveConn(ctx, c)
		}()
	}
	closeErr := l.Close()
	if errors.Is(closeErr, net.ErrClosed) {
		closeErr = nil
	}
	wg.Wait()
	return errors.Join(err, closeErr)
}

// handle calls the Handler; a panic in it is reported (OnError) and
// answered by nothing rather than ending the process and every render in
// flight with it.
func (s *Server) handle(ctx context.Context, req Request) (res *Response) {
	defer func() {
		if p := recover(); p != nil {
			s.fail(fmt.Errorf("rendering %s: panic: %v", req.WorkDir, p))
			res = nil
		}
	}()
	if res = s.Handler(ctx, req); res == nil {
		s.fail(fmt.Errorf("rendering %s: the handler gave no response", req.WorkDir))
	}
	return res
}

func (s *Server) fail(err error) {
	if s.OnError != nil {
		s.OnError(err)
	}
}

func (s *Server) serveConn(ctx context.Context, c *net.UnixConn) {
	defer c.Close() //nolint:errcheck // the response is written or abandoned
	// The server's end closes the connection: a client waiting for a
	// render it will not get falls back at once.
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	if err := checkPeer(c); err != nil {
		s.fail(err)
		return
	}
	rt, wt := s.ReadTimeout, s.WriteTimeout
	if rt <= 0 {
		rt = DefaultReadTimeout
	}
	if wt <= 0 {
		wt = DefaultWriteTimeout
	}
	_ = c.SetReadDeadline(time.Now().Add(rt))
	var req Request
	if err := readJSON(bufio.NewReaderSize(c, readStep), MaxRequestBytes, "render request", &req); err != nil {
		s.fail(err)
		return
	}
	start := time.Now()
	var res *Response
	if req.Version != ProtocolVersion {
		res = &Response{Code: 1, Stderr: fmt.Sprintf("error: resident renderer speaks protocol version %d, the request %d\n",
			ProtocolVersion, req.Version)}
	} else if res = s.handle(ctx, req); res == nil {
		return // the handler panicked: no answer, the client falls back
	}
	if ctx.Err() != nil {
		return // shutting down: no answer, the client falls back
	}
	if len(res.Manifests) > DefaultMaxManifestBytes {
		res = &Response{Code: 1, Stderr: fmt.Sprintf("error: %d bytes of manifests, above the resident renderer's cap of %d\n",
			len(res.Manifests), DefaultMaxManifestBytes)}
	}
	if s.Observe != nil {
		s.Observe(res, time.Since(start))
	}
	res.Version = ProtocolVersion
	_ = c.SetWriteDeadline(time.Now().Add(wt))
	w := bufio.NewWriterSize(c, readStep)
	err := writeJSON(w, MaxHeaderBytes, "response header", res)
	if err == nil {
		err = writeFrame(w, res.Manifests)
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		s.fail(fmt.Errorf("answering the render of %s: %w", req.WorkDir, err))
	}
}
