package chartsource

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/throughline-dev/throughline/exitcode"
)

// errForeignHost is wrapped by every request the guard refuses.
var errForeignHost = errors.New("refused: a chart source may only be reached at the host its lock entry names")

// hostGuard is the only way a Fetcher reaches the network: it refuses every
// request to another host than the chart source's own, and plain HTTP to a
// non-loopback host (unless insecure). For an OCI registry (oci), two more
// hosts are the registry protocol's own: the token service the registry
// names in its WWW-Authenticate challenge, and the storage a blob download
// is redirected to (the blob is verified by its digest whatever serves it).
// For an HTTP chart repository nothing else is reachable, redirects
// included.
type hostGuard struct {
	inner    http.RoundTripper
	host     string // host[:port] of the source, lowercase
	oci      bool
	insecure bool
	mu       sync.Mutex
	realms   map[string]bool
}

func newHostGuard(inner http.RoundTripper, host string, oci, insecure bool) *hostGuard {
	return &hostGuard{inner: inner, host: strings.ToLower(host), oci: oci, insecure: insecure, realms: map[string]bool{}}
}

func (g *hostGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	host := strings.ToLower(req.URL.Host)
	if err := g.allow(req, host); err != nil {
		return nil, err
	}
	resp, err := g.inner.RoundTrip(req)
	if err == nil && g.oci && host == g.host && resp.StatusCode == http.StatusUnauthorized {
		g.learnRealm(resp.Header.Values("WWW-Authenticate"))
	}
	return resp, err
}

func (g *hostGuard) allow(req *http.Request, host string) error {
	plainOK := req.URL.Scheme == "http" && (g.insecure || isLoopback(host))
	if req.URL.Scheme != "https" && !plainOK {
		return fmt.Errorf("%w: %s://%s (plain HTTP only to a loopback host)", errForeignHost, req.URL.Scheme, req.URL.Host)
	}
	if host == g.host {
		return nil
	}
	if g.oci {
		g.mu.Lock()
		realm := g.realms[host]
		g.mu.Unlock()
		if realm || blobRedirect(req, g.host) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is not %s", errForeignHost, req.URL.Redacted(), g.host)
}

// blobRedirect reports whether req follows a redirect answered to a blob
// GET on the registry host.
func blobRedirect(req *http.Request, registryHost string) bool {
	for r := req.Response; r != nil && r.Request != nil; r = r.Request.Response {
		prev := r.Request
		if strings.ToLower(prev.URL.Host) == registryHost {
			return prev.Method == http.MethodGet && strings.Contains(prev.URL.Path, "/blobs/sha256:")
		}
	}
	return false
}

// learnRealm lets through the token service of a Bearer challenge.
func (g *hostGuard) learnRealm(challenges []string) {
	for _, c := range challenges {
		scheme, params, _ := strings.Cut(c, " ")
		if !strings.EqualFold(scheme, "bearer") {
			continue
		}
		for _, p := range strings.Split(params, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok || !strings.EqualFold(k, "realm") {
				continue
			}
			if u, err := url.Parse(strings.Trim(v, `"`)); err == nil && u.Host != "" {
				g.mu.Lock()
				g.realms[strings.ToLower(u.Host)] = true
				g.mu.Unlock()
			}
		}
	}
}

// foreignRefusal turns a guard error into the refusal of ref.
func foreignRefusal(ref Ref, err error) error {
	if errors.Is(err, errForeignHost) {
		return &exitcode.Refusal{Rule: RuleChartForeignHost, Object: ref.String(), Err: err}
	}
	return nil
}
