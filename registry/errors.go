package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/remotelimit"
)

// The kinds of failure a caller branches on; every error of this package that
// comes from a registry wraps exactly one of them.
var (
	// ErrNotFound: the repository, tag or digest does not exist (404,
	// MANIFEST_UNKNOWN, NAME_UNKNOWN).
	ErrNotFound = errors.New("not found")
	// ErrUnauthorized: the registry refused the credentials (401, 403).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrUnreachable: the registry could not answer (DNS, connection, TLS,
	// timeout, 429 or 5xx after the retries). Try again later.
	ErrUnreachable = errors.New("registry unreachable")
	// ErrInvalid: the reference cannot be parsed, or the registry returned
	// something that is not a valid manifest (or an index naming a child that
	// does not exist, or a response over its remotelimit limit: then
	// errors.Is(err, remotelimit.ErrTooLarge) holds too).
	ErrInvalid = errors.New("invalid")
)

// Error is a failed registry operation on one reference.
type Error struct {
	Op        string // resolve, head, get, exists, ...
	Reference string
	Kind      error // ErrNotFound, ErrUnauthorized, ErrUnreachable or ErrInvalid
	Err       error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %v: %v", e.Op, e.Reference, e.Kind, e.Err)
}

// Unwrap returns the kind and the cause, so errors.Is works with both.
func (e *Error) Unwrap() []error { return []error{e.Kind, e.Err} }

// ExitCode is the exit code of the failure (exitcode.Coder): an
// unreachable registry is not decided yet (5: try again), whatever
// operation or caller met it; the rest is left to the caller (1 unless it
// wraps the error in another kind).
func (e *Error) ExitCode() int {
	if errors.Is(e.Kind, ErrUnreachable) {
		return exitcode.Pending
	}
	return exitcode.Internal
}

// Wrap classifies err, the failure of op on ref met through
// go-containerregistry's remote package directly (trust's referrers and
// bundles, a candidate's manifest), as this package's own calls are: an
// *Error of one kind, with its exit code. An *Error is returned as it is;
// nil stays nil.
func Wrap(op, ref string, err error) error { return newError(op, ref, err) }

// StatusCode is the HTTP status of the registry's answer, 0 when there was none.
func (e *Error) StatusCode() int {
	var te *transport.Error
	if errors.As(e.Err, &te) {
		return te.StatusCode
	}
	return 0
}

func newError(op, ref string, err error) error {
	if err == nil {
		return nil
	}
	var re *Error
	if errors.As(err, &re) {
		return err
	}
	return &Error{Op: op, Reference: ref, Kind: classify(err), Err: err}
}

func invalidf(op, ref, format string, args ...any) error {
	return &Error{Op: op, Reference: ref, Kind: ErrInvalid, Err: fmt.Errorf(format, args...)}
}

// classify maps a go-containerregistry or net/http error to a kind.
func classify(err error) error {
	var te *transport.Error
	if errors.As(err, &te) {
		for _, d := range te.Errors {
			switch d.Code {
			case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode:
				return ErrNotFound
			case transport.UnauthorizedErrorCode, transport.DeniedErrorCode:
				return ErrUnauthorized
			}
		}
		switch {
		case te.StatusCode == http.StatusNotFound:
			return ErrNotFound
		case te.StatusCode == http.StatusUnauthorized, te.StatusCode == http.StatusForbidden:
			return ErrUnauthorized
		case te.StatusCode == http.StatusTooManyRequests, te.StatusCode == http.StatusRequestTimeout, te.StatusCode >= 500:
			return ErrUnreachable
		}
		return ErrInvalid
	}
	var ne net.Error
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.Is(err, ErrInvalid), errors.Is(err, remotelimit.ErrTooLarge):
		// An answer over its size limit is an answer, not an outage.
		return ErrInvalid
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return ErrUnreachable
	case errors.As(err, &dnsErr), errors.As(err, &opErr), errors.As(err, &ne):
		return ErrUnreachable
	case errors.Is(err, errPlainHTTP):
		return ErrUnreachable
	}
	// Everything else (a digest that does not match, a body that does not
	// parse) is an answer that cannot be trusted.
	return ErrInvalid
}
