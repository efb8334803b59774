package chartsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
)

// IndexEntry is the part of an index.yaml chart version this package uses.
type IndexEntry struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	Digest  string   `json:"digest"`
}

// Index is the part of an HTTP chart repository's index.yaml this package
// uses (other fields are ignored: they are the repository's business).
type Index struct {
	APIVersion string                  `json:"apiVersion"`
	Entries    map[string][]IndexEntry `json:"entries"`
}

// ParseIndex reads an index.yaml (YAML or JSON): apiVersion v1 and entries
// are required, each entry of a chart must carry its name.
func ParseIndex(data []byte) (*Index, error) {
	js := data
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		var err error
		if js, err = sigyaml.YAMLToJSON(data); err != nil {
			return nil, fmt.Errorf("index.yaml: not YAML: %w", err)
		}
	}
	var idx Index
	if err := json.Unmarshal(js, &idx); err != nil {
		return nil, fmt.Errorf("index.yaml: %w", err)
	}
	if idx.APIVersion != "v1" {
		return nil, fmt.Errorf("index.yaml: apiVersion %q, want v1", idx.APIVersion)
	}
	if idx.Entries == nil {
		return nil, errors.New("index.yaml: no entries")
	}
	for n, vs := range idx.Entries {
		for i, v := range vs {
			if v.Name != n {
				return nil, fmt.Errorf("index.yaml: entries.%s[%d]: name %q", n, i, v.Name)
			}
		}
	}
	return &idx, nil
}

// Find returns the entry of name at exactly version.
func (idx *Index) Find(name, version string) (IndexEntry, bool) {
	for _, v := range idx.Entries[name] {
		if v.Version == version {
			return v, true
		}
	}
	return IndexEntry{}, false
}

// indexDigest normalizes index.yaml's digest (Helm writes the bare hex).
func indexDigest(d string) string {
	if d != "" && !strings.Contains(d, ":") {
		return "sha256:" + strings.ToLower(d)
	}
	return d
}

// httpSource is one HTTP chart repository: its URL and a client that can
// reach only its host.
type httpSource struct {
	f      *Fetcher
	ref    Ref
	base   *url.URL
	client *http.Client
}

func (f *Fetcher) httpSource(ref Ref) (*httpSource, error) {
	base, err := url.Parse(strings.TrimSuffix(ref.Repo, "/") + "/")
	if err != nil {
		return nil, &exitcode.InvalidInput{Err: fmt.Errorf("chart %s: repo: %w", ref, err)}
	}
	guard := newHostGuard(f.opts.Transport, base.Host, false, f.opts.Insecure)
	client := &http.Client{Transport: guard, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("more than 5 redirects")
		}
		if !sameOrigin(req.URL, base) {
			return fmt.Errorf("%w: redirected to %s", errForeignHost, req.URL.Redacted())
		}
		return nil
	}}
	return &httpSource{f: f, ref: ref, base: base, client: client}, nil
}

func sameOrigin(u, base *url.URL) bool {
	return strings.EqualFold(u.Scheme, base.Scheme) && strings.EqualFold(u.Host, base.Host)
}

// get GETs u (on the repository's host), at most limit bytes.
func (s *httpSource) get(ctx context.Context, u *url.URL, what string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %s: %w", s.ref, what, err)
	}
	req.Header.Set("User-Agent", s.f.opts.UserAgent)
	if err := s.auth(req); err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, sourceError(s.ref, what, 0, err)
	}
	defer func() { _ = resp.Body.Close() }() // read-only
	if resp.StatusCode != http.StatusOK {
		return nil, sourceError(s.ref, what, resp.StatusCode, nil)
	}
	if resp.ContentLength > limit {
		return nil, tooLarge(s.ref, fmt.Sprintf("%s (%d bytes)", what, resp.ContentLength), limit)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, sourceError(s.ref, what, 0, err)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(s.ref, what, limit)
	}
	return data, nil
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
	raw, err := s.get(ctx, s.base.JoinPath("index.yaml"), "index.yaml", f.opts.MaxIndexSize)
	if err != nil {
		return nil, nil, err
	}
	idx, err := ParseIndex(raw)
	if err != nil {
		return nil, nil, &exitcode.InvalidInput{Err: fmt.Errorf("chart repository %s: %w", ref.Repo, err)}
	}
	e, ok := idx.Find(ref.Name, ref.Version)
	if !ok {
		return nil, nil, &exitcode.InvalidInput{Err: fmt.Errorf("chart %s: the repository's index.yaml has no version %s of %s",
			ref, ref.Version, ref.Name)}
	}
	if len(e.URLs) == 0 {
		return nil, nil, &exitcode.InvalidInput{Err: fmt.Errorf("chart %s: index.yaml gives no url", ref)}
	}
	u, err := s.base.Parse(e.URLs[0])
	if err != nil || !sameOrigin(u, s.base) || u.User != nil {
		return nil, nil, &exitcode.Refusal{Rule: RuleChartForeignHost, Object: ref.String(), Field: "urls[0]",
			Reason: fmt.Sprintf("index.yaml points the package to %q, not on the repository's own %s://%s", e.URLs[0], s.base.Scheme, s.base.Host)}
	}
	data, err := s.get(ctx, u, "package "+u.Redacted(), f.opts.MaxChartSize)
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
