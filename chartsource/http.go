package chartsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/remotelimit"
)

// httpSource is one HTTP chart repository: its URL and the guard that
// lets its clients reach only its host.
type httpSource struct {
	f     *Fetcher
	ref   Ref
	base  *url.URL
	guard http.RoundTripper
}

func (f *Fetcher) httpSource(ref Ref) (*httpSource, error) {
	base, err := url.Parse(strings.TrimSuffix(ref.Repo, "/") + "/")
	if err != nil {
		return nil, &exitcode.InvalidInput{Err: fmt.Errorf("chart %s: repo: %w", ref, err)}
	}
	guard := newHostGuard(f.opts.Transport, base.Host, false, f.opts.Insecure)
	return &httpSource{f: f, ref: ref, base: base, guard: guard}, nil
}

// client reaches only the repository's host (redirects included) and
// reads at most l.Max bytes of a response: one client per kind of read.
func (s *httpSource) client(l remotelimit.Limit) *http.Client {
	return &http.Client{Transport: remotelimit.New(s.guard, remotelimit.Fixed(l)), CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("more than 5 redirects")
		}
		if !sameOrigin(req.URL, s.base) {
			return fmt.Errorf("%w: redirected to %s", errForeignHost, req.URL.Redacted())
		}
		return nil
	}}
}

func sameOrigin(u, base *url.URL) bool {
	return strings.EqualFold(u.Scheme, base.Scheme) && strings.EqualFold(u.Host, base.Host)
}

// open GETs u (on the repository's host) and returns its body, bounded
// by l on the wire (remotelimit): a larger Content-Length is refused before
// the body is read, a body that runs over fails while read.
func (s *httpSource) open(ctx context.Context, u *url.URL, what string, l remotelimit.Limit) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %s: %w", s.ref, what, err)
	}
	req.Header.Set("User-Agent", s.f.opts.UserAgent)
	if err := s.auth(req); err != nil {
		return nil, err
	}
	resp, err := s.client(l).Do(req)
	if err != nil {
		return nil, sourceError(s.ref, what, 0, err)
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close() // read-only
		return nil, sourceError(s.ref, what, resp.StatusCode, nil)
	}
	return resp.Body, nil
}

// get GETs u into memory, at most l.Max bytes.
func (s *httpSource) get(ctx context.Context, u *url.URL, what string, l remotelimit.Limit) ([]byte, error) {
	body, err := s.open(ctx, u, what, l)
	if err != nil {
		return nil, err
	}
	defer func() { _ = body.Close() }() // read-only
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, sourceError(s.ref, what, 0, err)
	}
	return data, nil
}

// download GETs u into a new file of dir (empty: os.TempDir()), at most
// l.Max bytes, never holding the body in memory; the caller removes the
// file.
func (s *httpSource) download(ctx context.Context, u *url.URL, what string, l remotelimit.Limit, dir string) (string, error) {
	body, err := s.open(ctx, u, what, l)
	if err != nil {
		return "", err
	}
	defer func() { _ = body.Close() }() // read-only
	f, err := os.CreateTemp(dir, "chart-index-*.yaml")
	if err != nil {
		return "", fmt.Errorf("chart %s: storing %s: %w", s.ref, what, err)
	}
	_, err = io.Copy(f, body)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("chart %s: storing %s: %w", s.ref, what, cerr)
	}
	if err != nil {
		_ = os.Remove(f.Name()) // our own temporary file
		return "", sourceError(s.ref, what, 0, err)
	}
	return f.Name(), nil
}

// auth adds basic credentials from the keychain, only over https or to a
// loopback host.
func (s *httpSource) auth(req *http.Request) error {
	if req.URL.Scheme != "https" && !isLoopback(req.URL.Host) {
		return nil
	}
	reg, err := name.NewRegistry(req.URL.Host)
	if err != nil {
		return nil //nolint:nilerr // a host go-containerregistry cannot name has no stored credentials
	}
	a, err := s.f.opts.Keychain.Resolve(reg)
	if err != nil {
		return fmt.Errorf("chart %s: credentials for %s: %w", s.ref, req.URL.Host, err)
	}
	if a == authn.Anonymous {
		return nil
	}
	cfg, err := a.Authorization()
	if err != nil {
		return fmt.Errorf("chart %s: credentials for %s: %w", s.ref, req.URL.Host, err)
	}
	if cfg.Username != "" || cfg.Password != "" {
		req.SetBasicAuth(cfg.Username, cfg.Password)
	}
	return nil
}

// fetchHTTP reads the repository's index.yaml, finds ref's entry, downloads
// its package from the repository's own host and checks the package's
// sha256 against the index's digest. The caller compares it with the pin.
func (f *Fetcher) fetchHTTP(ctx context.Context, ref Ref) ([]byte, *Resolved, error) {
	s, err := f.httpSource(ref)
	if err != nil {
		return nil, nil, err
	}
	file, err := s.download(ctx, s.base.JoinPath("index.yaml"), "index.yaml",
		remotelimit.Limit{Kind: remotelimit.ChartIndex.Kind, Max: f.opts.MaxIndexSize}, f.opts.IndexDir)
	if err != nil {
		return nil, nil, err
	}
	e, err := f.opts.LookupIndex(ctx, file, ref.Name, ref.Version)
	_ = os.Remove(file) // our own temporary file
	if errors.Is(err, ErrIndexTooLarge) {
		err = &exitcode.Refusal{Rule: RuleChartTooLarge, Err: err}
	}
	if err != nil {
		if r, ok := errors.AsType[*exitcode.Refusal](err); ok && r.Object == "" {
			r.Object = ref.String()
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("chart %s: %w", ref, err)
	}
	if len(e.URLs) == 0 {
		return nil, nil, &exitcode.InvalidInput{Err: fmt.Errorf("chart %s: index.yaml gives no url", ref)}
	}
	u, err := s.base.Parse(e.URLs[0])
	if err != nil || !sameOrigin(u, s.base) || u.User != nil {
		return nil, nil, &exitcode.Refusal{Rule: RuleChartForeignHost, Object: ref.String(), Field: "urls[0]",
			Reason: fmt.Sprintf("index.yaml points the package to %q, not on the repository's own %s://%s", e.URLs[0], s.base.Scheme, s.base.Host)}
	}
	data, err := s.get(ctx, u, "package "+u.Redacted(), remotelimit.Limit{Kind: "chart package", Max: f.opts.MaxChartSize})
	if err != nil {
		return nil, nil, err
	}
	got, want := digestOf(data), indexDigest(e.Digest)
	if want == "" || got != want {
		return nil, nil, &exitcode.Refusal{Rule: RuleChartDigestMismatch, Object: ref.String(),
			Reason: fmt.Sprintf("the package %s has digest %s but index.yaml says %q: the repository replaced the package or its index is stale",
				u.Redacted(), got, want)}
	}
	return data, &Resolved{Ref: ref, Kind: KindHTTP, Digest: got, Package: got, Size: int64(len(data)), URL: u.Redacted()}, nil
}
