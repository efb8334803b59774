package chartsource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/remotelimit"
	"github.com/throughline-dev/throughline/render"
)

// Defaults of [Options].
const (
	DefaultMaxChartSize = 20 << 20
	// DefaultMaxIndexSize is remotelimit.ChartIndex's limit: an index.yaml
	// is stored to a file on the way in, never held in memory whole.
	DefaultMaxIndexSize = 64 << 20
	DefaultTimeout      = 60 * time.Second
	// maxManifestSize caps an OCI manifest (remotelimit.Manifest, on the
	// wire; here for the cache).
	maxManifestSize = 4 << 20
)

// Options configures a [Fetcher]. The zero value is usable.
type Options struct {
	// CacheDir keeps chart packages and OCI manifests by digest; empty
	// caches nothing.
	CacheDir string
	// MaxChartSize caps a chart package (.tgz or chart layer), default
	// DefaultMaxChartSize; MaxIndexSize caps an index.yaml, default
	// DefaultMaxIndexSize.
	MaxChartSize, MaxIndexSize int64
	// Keychain supplies credentials per host, for OCI registries and HTTP
	// chart repositories alike (basic auth, sent only over https or to a
	// loopback host); nil means authn.DefaultKeychain (the Docker config,
	// credential helpers).
	Keychain authn.Keychain
	// Insecure allows plain HTTP to any host; without it only loopback
	// hosts may be spoken to over HTTP.
	Insecure bool
	// Offline makes a cache miss an error: nothing is fetched.
	Offline bool
	// Timeout bounds one fetch or resolution (default DefaultTimeout).
	Timeout time.Duration
	// Transport is the base HTTP transport (default: one with timeouts on
	// every phase, proxies from the environment).
	Transport http.RoundTripper
	// UserAgent is sent with every request.
	UserAgent string
	// LookupIndex finds a chart version in an HTTP repository's index.yaml,
	// stored in indexFile (at most MaxIndexSize bytes; removed after the
	// call). Default: render.LookupIndex, which parses in the render's
	// memory-capped, confined child when the process renders in one
	// (render.UseWorker, every command) and in this process, only up to
	// MaxInProcessIndexSize, otherwise.
	LookupIndex func(ctx context.Context, indexFile, name, version string) (IndexEntry, error)
	// IndexDir is where a downloaded index.yaml is stored for LookupIndex
	// (default os.TempDir()); LookupIndex must be able to read it.
	IndexDir string
}

// Fetcher fetches chart packages by digest and resolves versions to
// digests. It is safe for concurrent use.
type Fetcher struct {
	opts  Options
	cache cache
}

// NewFetcher returns a Fetcher.
func NewFetcher(opts Options) *Fetcher {
	if opts.MaxChartSize <= 0 {
		opts.MaxChartSize = DefaultMaxChartSize
	}
	if opts.MaxIndexSize <= 0 {
		opts.MaxIndexSize = DefaultMaxIndexSize
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Keychain == nil {
		opts.Keychain = authn.DefaultKeychain
	}
	if opts.Transport == nil {
		opts.Transport = baseTransport(opts.Timeout)
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "throughline"
	}
	if opts.LookupIndex == nil {
		opts.LookupIndex = render.LookupIndex
	}
	return &Fetcher{opts: opts, cache: cache{dir: opts.CacheDir}}
}

// baseTransport has timeouts on every phase, so a source that accepts a
// connection and never answers cannot hang a render.
func baseTransport(timeout time.Duration) *http.Transport {
	d := &net.Dialer{Timeout: min(timeout, 10*time.Second), KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   min(timeout, 10*time.Second),
		ResponseHeaderTimeout: timeout,
	}
}

// Resolved is a chart version resolved to its digest.
type Resolved struct {
	Ref
	// Kind is KindOCI or KindHTTP.
	Kind string `json:"kind"`
	// Digest is the OCI manifest digest or the sha256 of the .tgz.
	Digest string `json:"digest"`
	// Package is the sha256 of the chart package (.tgz): for OCI the chart
	// layer's digest, for HTTP the Digest.
	Package string `json:"package"`
	// Size is the package's size in bytes.
	Size int64 `json:"size"`
	// URL is where an HTTP package was downloaded from.
	URL string `json:"url,omitempty"`
}

// Fetch returns the chart package (.tgz bytes) that e pins, verified against
// e.Digest: from the cache when it holds it (no request), else from the
// source. A package that differs from the pin is refused naming both
// digests (rule chart-digest-mismatch).
func (f *Fetcher) Fetch(ctx context.Context, e Entry) ([]byte, error) {
	if err := e.validate(); err != nil {
		return nil, &exitcode.InvalidInput{Err: fmt.Errorf("lock entry %s: %w", e.Ref(), err)}
	}
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	if e.Ref().Kind() == KindOCI {
		data, _, err := f.fetchOCI(ctx, e.Ref(), e.Digest)
		return data, err
	}
	if data, ok := f.cache.get("blobs", e.Digest, f.opts.MaxChartSize); ok {
		return data, nil
	}
	if f.opts.Offline {
		return nil, f.offline(e.Ref(), e.Digest)
	}
	data, r, err := f.fetchHTTP(ctx, e.Ref())
	if err != nil {
		return nil, err
	}
	if r.Digest != e.Digest {
		return nil, &exitcode.Refusal{Rule: RuleChartDigestMismatch, Object: e.Ref().String(),
			Reason: fmt.Sprintf("the repository serves %s (index and package agree) but the lock pins %s: "+
				"the repository replaced the package of this version", r.Digest, e.Digest)}
	}
	if err := f.cache.put("blobs", r.Digest, data); err != nil {
		return nil, err
	}
	return data, nil
}

// Resolve asks the source what version ref names now: for OCI the tag's
// manifest digest (the manifest and its chart layer are then fetched by that
// digest and checked as Fetch does), for HTTP the digest index.yaml gives,
// verified by downloading the package. Nothing of a version is cached: a
// version is a name the source can move.
func (f *Fetcher) Resolve(ctx context.Context, ref Ref) (*Resolved, error) {
	if err := ref.Validate(); err != nil {
		if IsFloating(err) {
			return nil, &exitcode.Refusal{Rule: RuleFloatingChartVersion, Object: ref.String(), Err: err}
		}
		return nil, &exitcode.InvalidInput{Err: fmt.Errorf("chart %s: %w", ref, err)}
	}
	if f.opts.Offline {
		return nil, exitcode.NotDecided(fmt.Errorf("resolving chart %s: offline, a version is always asked of its source", ref))
	}
	ctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	defer cancel()
	if ref.Kind() == KindOCI {
		return f.resolveOCI(ctx, ref)
	}
	data, r, err := f.fetchHTTP(ctx, ref)
	if err != nil {
		return nil, err
	}
	if err := f.cache.put("blobs", r.Digest, data); err != nil {
		return nil, err
	}
	return r, nil
}

func (f *Fetcher) offline(ref Ref, digest string) error {
	return exitcode.NotDecided(fmt.Errorf("chart %s@%s is not in the chart cache and fetching is off", ref, digest))
}

// sourceError classifies a failed request to a chart source: a refusal by
// the host guard stays a refusal, no answer (network, timeout, 5xx, 429) is
// not decided (exit 5), a 404 is invalid input (the lock names a package
// its source does not serve), anything else is an error (exit 1).
// A response over its limit (remotelimit) is refused (chart-too-large).
func sourceError(ref Ref, what string, status int, err error) error {
	if r := foreignRefusal(ref, err); r != nil {
		return r
	}
	if te, ok := errors.AsType[*remotelimit.TooLargeError](err); ok {
		return &exitcode.Refusal{Rule: RuleChartTooLarge, Object: ref.String(), Err: te}
	}
	var ne net.Error
	switch {
	case err != nil && (errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		return exitcode.NotDecided(fmt.Errorf("chart %s: %s: %w", ref, what, err))
	case status == http.StatusNotFound:
		return &exitcode.InvalidInput{Err: fmt.Errorf("chart %s: %s: not found (404)", ref, what)}
	case status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500:
		return exitcode.NotDecided(fmt.Errorf("chart %s: %s: HTTP %d", ref, what, status))
	case err != nil:
		return fmt.Errorf("chart %s: %s: %w", ref, what, err)
	}
	return fmt.Errorf("chart %s: %s: HTTP %d", ref, what, status)
}

// tooLarge is the refusal of something above its cap.
func tooLarge(ref Ref, what string, limit int64) error {
	return &exitcode.Refusal{Rule: RuleChartTooLarge, Object: ref.String(),
		Reason: fmt.Sprintf("%s exceeds the %d byte limit", what, limit)}
}
