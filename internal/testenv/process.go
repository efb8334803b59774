package testenv

import (
	"bytes"
	"context"
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
)

// logTailLines is how much of a server's log a failed test prints.
const logTailLines = 120

// process is one server process of a test, logging to a file in t.TempDir.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{} // closed when the process has exited
	waitErr error         // valid after done is closed
}

// environ returns the test's environment without the variables whose names
// start with one of drop, plus add.
func environ(add []string, drop ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, d := range drop {
			if strings.HasPrefix(name, d) {
				keep = false
			}
		}
		if keep {
			env = append(env, kv)
		}
	}
	return append(env, add...)
}

// startProcess starts bin with args in the environment env (see environ) and
// registers its stop (SIGTERM, then SIGKILL after 10 s) and, when the test
// failed, the printing of its log tail with t.Cleanup. The process is also
// killed if the test binary dies (Pdeathsig).
func startProcess(t testing.TB, name, bin string, args, env []string) (*process, error) {
	t.Helper()
	dir := t.TempDir()
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create log of %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &process{name: name, cmd: cmd, logPath: logPath, logFile: logFile, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close() // the start error is the one to report
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	// Cleanups run last-registered first: stop, then print the complete log.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log (last %d lines of %s):\n%s", name, logTailLines, logPath, p.tail(logTailLines))
		}
		_ = logFile.Close() // our copy of the child's stdout/stderr; the log was read above
	})
	t.Cleanup(p.stop)
	return p, nil
}

// stop ends the process group: SIGTERM, then SIGKILL after 10 s.
func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// exited reports whether the process has ended, and then why.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		if p.waitErr == nil {
			return true, errors.New("exited with status 0")
		}
		return true, p.waitErr
	default:
		return false, nil
	}
}

// tail returns the last n lines of the log.
func (p *process) tail(n int) string {
	return tailFile(p.logPath, n)
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// errPortTaken says a server could not listen on a port it was given.
var errPortTaken = errors.New("a port it was given was taken (address already in use)")

// addrInUse reports whether the process died because its port was taken
// (freePort is racy by nature: another process may grab the port first).
func (p *process) addrInUse() bool {
	b, _ := os.ReadFile(p.logPath)
	return bytes.Contains(b, []byte("address already in use"))
}

// waitReady polls ready until it returns nil, the process exits or ctx ends.
func (p *process) waitReady(ctx context.Context, ready func(context.Context) error) error {
	var last error
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if dead, err := p.exited(); dead {
			return fmt.Errorf("%s exited before it was ready: %w; log tail:\n%s", p.name, err, p.tail(30))
		}
		if last = ready(ctx); last == nil {
			return nil
		} else if errors.Is(last, errPortTaken) {
			return fmt.Errorf("%s: %w", p.name, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last check: %w); log tail:\n%s", p.name, ctx.Err(), last, p.tail(30))
		case <-tick.C:
		}
	}
}

// startServer starts a server process on fresh ports, waits until it is
// ready and returns the ports, retrying up to 3 times when a port it was given
// got taken meanwhile. args builds the command line for a new set of ports.
// The process is stopped in t.Cleanup.
func startServer(ctx context.Context, t testing.TB, name, bin string, env []string, nPorts int,
	args func(ports []int) []string, ready func(ctx context.Context, ports []int) error,
) ([]int, error) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		ports := make([]int, nPorts)
		for i := range ports {
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			ports[i] = port
		}
		p, err := startProcess(t, name, bin, args(ports), env)
		if err != nil {
			return nil, err
		}
		err = p.waitReady(ctx, func(ctx context.Context) error {
			if p.addrInUse() {
				return errPortTaken
			}
			return ready(ctx, ports)
		})
		// A server may log a failed bind of one listener and keep running
		// (source-controller's artifact server does), so the log is read
		// again once it is ready.
		if err == nil && !p.addrInUse() {
			return ports, nil
		}
		if p.addrInUse() && attempt < 3 {
			p.stop()
			t.Logf("%s: port taken, retrying (%d)", name, attempt)
			continue
		}
		if err == nil {
			err = fmt.Errorf("%s: %w; log tail:\n%s", name, errPortTaken, p.tail(30))
		}
		return nil, err
	}
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("release port %d on 127.0.0.1: %w", port, err)
	}
	return port, nil
}

// httpStatus returns the status code of GET url.
func httpStatus(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// expectStatus returns a readiness check: GET url answers one of codes.
func expectStatus(url string, codes ...int) func(context.Context) error {
	return func(ctx context.Context) error {
		code, err := httpStatus(ctx, url)
		if err != nil {
			return err
		}
		for _, c := range codes {
			if code == c {
				return nil
			}
		}
		return fmt.Errorf("GET %s: status %d", url, code)
	}
}

// syncBuffer is a goroutine-safe log buffer for in-process servers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Printf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(&b.buf, format, args...)
	if !strings.HasSuffix(format, "\n") {
		b.buf.WriteByte('\n')
	}
}

// String is everything written.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tail is the last logTailLines lines written.
func (b *syncBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimRight(b.buf.String(), "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return strings.Join(lines, "\n")
}

// startTimeout bounds how long a server may take to become ready (2 cores,
// other builds running, -race).
const startTimeout = 90 * time.Second

// startContext is the context a Start function waits with: the test's
// context, bounded by startTimeout.
func startContext(t testing.TB) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), startTimeout)
}
