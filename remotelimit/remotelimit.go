package remotelimit

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// MiB is 1<<20 bytes.
const MiB = 1 << 20

// Limit is a kind of remote read and the most bytes its body may have.
type Limit struct {
	// Kind names what is read ("OCI manifest"), for the error.
	Kind string
	// Max is the most bytes of a body; a body of Max bytes is accepted.
	Max int64
}

// The project's limits on remote reads (docs/operations.md).
var (
	// Manifest bounds an OCI image manifest, index or referrers list.
	Manifest = Limit{Kind: "OCI manifest", Max: 4 * MiB}
	// Token bounds a registry's token response, its /v2/ ping and any
	// request of a registry client that is not a manifest or a blob
	// (go-containerregistry caps a token at 64 KiB too, with an untyped
	// error; this limit answers first and holds for every client).
	Token = Limit{Kind: "registry token or API response", Max: 64 << 10}
	// ChartIndex bounds an HTTP chart repository's index.yaml on the wire.
	// It is stored to a file, never held in memory whole, and parsed where
	// memory is capped (chartsource.Options.LookupIndex).
	ChartIndex = Limit{Kind: "chart repository index.yaml", Max: 64 * MiB}
	// Default bounds any other response.
	Default = Limit{Kind: "response", Max: 1 * MiB}
)

// Blob is the limit of a blob or chart package of at most limit bytes.
func Blob(limit int64) Limit { return Limit{Kind: "blob", Max: limit} }

// ErrTooLarge is matched (errors.Is) by every *TooLargeError.
var ErrTooLarge = errors.New("remote response over its size limit")

// TooLargeError is a response refused for its size.
type TooLargeError struct {
	// URL is the request's scheme, host and path (no user, query or fragment).
	URL string
	// Limit is the limit the response exceeded.
	Limit Limit
	// Declared is the response's Content-Length when it was refused before
	// its body was read, -1 when the body ran over the limit while read.
	Declared int64
}

func (e *TooLargeError) Error() string {
	if e.Declared >= 0 {
		return fmt.Sprintf("%s %s: Content-Length %d exceeds the %d byte limit", e.Limit.Kind, e.URL, e.Declared, e.Limit.Max)
	}
	return fmt.Sprintf("%s %s: more than the %d byte limit was sent", e.Limit.Kind, e.URL, e.Limit.Max)
}

// Is makes errors.Is(err, ErrTooLarge) hold.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Policy picks the limit of a request.
type Policy func(req *http.Request) Limit

// Fixed is the policy of a client that reads one kind.
func Fixed(l Limit) Policy { return func(*http.Request) Limit { return l } }

// Registry is the policy of an OCI registry client: by the distribution
// path of the request (the first one, for a redirect), manifests and
// referrers are Manifest, blobs are blob, anything else Token.
func Registry(blob Limit) Policy {
	return func(req *http.Request) Limit {
		p := first(req).URL.Path
		switch {
		case !strings.HasPrefix(p, "/v2/"):
			return Token
		case strings.Contains(p, "/manifests/"), strings.Contains(p, "/referrers/"):
			return Manifest
		case strings.Contains(p, "/blobs/"):
			return blob
		}
		return Token
	}
}

// first is the request a redirect chain started with.
func first(req *http.Request) *http.Request {
	for req.Response != nil && req.Response.Request != nil {
		req = req.Response.Request
	}
	return req
}

// New wraps inner (nil: http.DefaultTransport) so that every response is
// bounded by policy's limit for its request.
func New(inner http.RoundTripper, policy Policy) http.RoundTripper {
	if inner == nil {
		inner = http.DefaultTransport
	}
	return &transport{inner: inner, policy: policy}
}

type transport struct {
	inner  http.RoundTripper
	policy Policy
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	l := t.policy(req)
	resp, err := t.inner.RoundTrip(req)
	if err != nil || req.Method == http.MethodHead {
		return resp, err
	}
	if resp.ContentLength > l.Max {
		_ = resp.Body.Close() // unread: the connection is not reused
		return nil, &TooLargeError{URL: Redact(req.URL), Limit: l, Declared: resp.ContentLength}
	}
	resp.Body = &body{rc: resp.Body, left: l.Max, err: &TooLargeError{URL: Redact(req.URL), Limit: l, Declared: -1}}
	return resp, nil
}

// body fails once more than its limit has been read; it never asks the
// connection for more than one byte past the limit.
type body struct {
	rc   io.ReadCloser
	left int64
	err  *TooLargeError
	over bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.over {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		n, b.over = int(b.left), true
		b.left = 0
		return n, b.err
	}
	b.left -= int64(n)
	return n, err
}

func (b *body) Close() error { return b.rc.Close() }

// Redact is u's scheme, host and path: no user, query or fragment.
func Redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return c.String()
}
