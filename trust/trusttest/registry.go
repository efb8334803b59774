package trusttest

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// NewAt is a World on the registry at host (a real one, such as
// internal/testenv's docker-registry). referrers: Attach stores bundles as
// OCI 1.1 referrers (through the referrers tag sha256-<hex> on a registry
// without the referrers API), else under cosign's tags. Requests stays 0:
// count on the client's side with a Counter.
func NewAt(t testing.TB, host string, referrers bool) *World {
	t.Helper()
	w := &World{T: t, Host: host, Referrers: referrers, Files: map[string][]byte{}, Now: time.Now()}
	w.keys()
	return w
}

// Counter is an http.RoundTripper counting the requests the registry
// answered, by kind: ping (GET /v2/), token, manifest, blob, referrers,
// other. A request that got no answer (go-containerregistry pings a
// loopback registry over https and http at once; the https attempt fails
// its TLS handshake on a plain-HTTP registry) is counted as unanswered,
// outside Total.
type Counter struct {
	// Base sends the requests (nil: http.DefaultTransport).
	Base http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

// RoundTrip counts r and sends it.
func (c *Counter) RoundTrip(r *http.Request) (*http.Response, error) {
	base := c.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	kind := requestKind(r)
	if err != nil {
		kind = unanswered
	}
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[kind]++
	c.mu.Unlock()
	return resp, err
}

const unanswered = "unanswered"

func requestKind(r *http.Request) string {
	p := r.URL.Path
	switch {
	case p == "/v2/" || p == "/v2":
		return "ping"
	case !strings.HasPrefix(p, "/v2/"):
		return "token"
	case strings.Contains(p, "/manifests/"):
		return "manifest"
	case strings.Contains(p, "/blobs/"):
		return "blob"
	case strings.Contains(p, "/referrers/"):
		return "referrers"
	}
	return "other"
}

// Total is the number of requests sent since the last Reset.
func (c *Counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := 0
	for k, n := range c.n {
		if k != unanswered {
			t += n
		}
	}
	return t
}

// Reset forgets the counts.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = nil
}

// String is the counts by kind, e.g. "blob=4 manifest=1 ping=1".
func (c *Counter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k, n := range c.n {
		out = append(out, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// As sends every registry request to w's in-process registry over plain
// HTTP, whatever host the image names: it plays ghcr.io, so that a
// repository's overlays keep their image names and the evidence is
// fetched from a real registry under the same repository path.
func (w *World) As() http.RoundTripper { return registryAs{w.Host} }

type registryAs struct{ host string }

func (t registryAs) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host, req.Host = "http", t.host, t.host
	return http.DefaultTransport.RoundTrip(req)
}
