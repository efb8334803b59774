package resident

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"
)

// SocketName is the socket's name in the resident renderer's directory.
const SocketName = "render.sock"

// SocketPath is the socket in dir.
func SocketPath(dir string) string { return filepath.Join(dir, SocketName) }

// Client defaults.
const (
	DefaultDialTimeout = 500 * time.Millisecond
	// DefaultTimeout is the longest the client waits for a response: above
	// the render child's default budget (45 s), below Argo CD's 60 s
	// plugin timeout less an in-process fallback of a cache hit.
	DefaultTimeout = 50 * time.Second
)

// Client hands renders to a resident renderer.
type Client struct {
	// Dir is the resident renderer's directory (its socket is
	// SocketPath(Dir)).
	Dir string
	// DialTimeout bounds connecting (<= 0: DefaultDialTimeout); Timeout
	// the whole exchange (<= 0: DefaultTimeout).
	DialTimeout time.Duration
	Timeout     time.Duration
	// MaxManifestBytes caps the manifests of a response (<= 0:
	// DefaultMaxManifestBytes).
	MaxManifestBytes int64
}

// UnavailableError is a render the resident renderer did not give: it is
// absent, unhealthy, too slow, died mid-render, or answered with
// something that is not a response. The caller renders in-process.
type UnavailableError struct {
	Socket string
	Err    error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("resident renderer at %s unavailable: %v", e.Socket, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Generate sends req (its Version set here) and returns the response. Any
// failure to get a well-formed response in time is an *UnavailableError;
// a response is returned as it is, whatever its Code.
func (c *Client) Generate(ctx context.Context, req Request) (*Response, error) {
	socket := SocketPath(c.Dir)
	unavailable := func(err error) error { return &UnavailableError{Socket: socket, Err: err} }
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errNoAnswer)
	defer cancel()
	dial := c.DialTimeout
	if dial <= 0 {
		dial = DefaultDialTimeout
	}
	d := net.Dialer{Timeout: dial}
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, unavailable(err)
	}
	defer conn.Close() //nolint:errcheck // the response is read; nothing is lost on close
	// An answer is trusted only from a resident renderer of this user:
	// another user's process listening there could answer anything.
	if uc, ok := conn.(*net.UnixConn); ok {
		if err := checkPeer(uc); err != nil {
			return nil, unavailable(err)
		}
	}
	// The context's end (the Timeout, the caller's deadline or
	// cancellation) interrupts a blocked read or write; only it does, so
	// that the error names its cause (ctxErr).
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req.Version = ProtocolVersion
	if err := writeJSON(conn, MaxRequestBytes, "render request", req); err != nil {
		return nil, unavailable(err)
	}
	br := bufio.NewReaderSize(conn, readStep)
	var res Response
	if err := readJSON(br, MaxHeaderBytes, "response header", &res); err != nil {
		return nil, unavailable(ctxErr(ctx, timeout, err))
	}
	if res.Version != ProtocolVersion {
		return nil, unavailable(fmt.Errorf("response of protocol version %d, want %d", res.Version, ProtocolVersion))
	}
	if res.Code < 0 || res.Code > maxExitCode {
		return nil, unavailable(fmt.Errorf("response with exit code %d", res.Code))
	}
	limit := c.MaxManifestBytes
	if limit <= 0 {
		limit = DefaultMaxManifestBytes
	}
	if res.Manifests, err = readFrame(br, limit, "manifests"); err != nil {
		return nil, unavailable(ctxErr(ctx, timeout, err))
	}
	if res.Code != 0 && len(res.Manifests) > 0 {
		return nil, unavailable(fmt.Errorf("response with exit code %d holds %d bytes of manifests", res.Code, len(res.Manifests)))
	}
	if res.Code == 0 && len(res.Manifests) == 0 {
		return nil, unavailable(errors.New("response with exit code 0 holds no manifests"))
	}
	return &res, nil
}

// maxExitCode is the largest exit code of the contract (exitcode.Pending).
const maxExitCode = 5

// errNoAnswer is the cause of the end of an exchange at the client's
// Timeout (not the caller's deadline or cancellation).
var errNoAnswer = errors.New("no answer in time")

// ctxErr says that the exchange timed out, or was cancelled or ran out of
// the caller's time (its cause), when that is why err happened.
func ctxErr(ctx context.Context, timeout time.Duration, err error) error {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errNoAnswer):
		return fmt.Errorf("no answer within %s: %w", timeout, err)
	case cause != nil:
		return fmt.Errorf("%w: %w", cause, err)
	}
	return err
}
