package registry

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/remotelimit"
)

const marker = "inflated-by-the-server "

// inflated answers the GETs match selects with size bytes of marker
// (Content-Length or chunked).
func inflated(match func(*http.Request) bool, size int, chunked bool) func(http.Handler) http.Handler {
	chunk := bytes.Repeat([]byte(marker), (32<<10)/len(marker)+1)[:32<<10]
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || !match(r) {
				h.ServeHTTP(w, r)
				return
			}
			if !chunked {
				w.Header().Set("Content-Length", strconv.Itoa(size))
			}
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			for left := size; left > 0; left -= len(chunk) {
				if _, err := w.Write(chunk[:min(left, len(chunk))]); err != nil {
					return
				}
				if chunked {
					w.(http.Flusher).Flush()
				}
			}
		})
	}
}

// readCounter counts the response body bytes the process reads.
type readCounter struct {
	inner http.RoundTripper
	n     atomic.Int64
}

func (c *readCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.inner.RoundTrip(req)
	if err == nil {
		resp.Body = &countedBody{ReadCloser: resp.Body, n: &c.n}
	}
	return resp, err
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func wantTooLarge(t *testing.T, err error, rc *readCounter, limit, slack int64) {
	t.Helper()
	t.Logf("%v", err)
	if !errors.Is(err, remotelimit.ErrTooLarge) {
		t.Fatalf("want remotelimit.ErrTooLarge, got %v", err)
	}
	if n := rc.n.Load(); n > limit+1+slack {
		t.Errorf("the process read %d response bytes, limit %d", n, limit)
	}
	if strings.Contains(err.Error(), strings.TrimSpace(marker)) {
		t.Errorf("the error echoes the response: %.300s", err)
	}
}

var wires = []struct {
	name    string
	chunked bool
}{{"content-length", false}, {"chunked", true}}

// TestManifestOverLimit: a manifest above 4 MiB is refused before
// go-containerregistry buffers it (up to 100 MiB), for a tag and for a
// digest.
func TestManifestOverLimit(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			reg := newTestRegistry(t, inflated(func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/manifests/") }, 12<<20, w.chunked))
			img := pushImage(t, reg.Host+"/app:v1")
			rc := &readCounter{inner: http.DefaultTransport}
			o := fastOptions()
			o.Transport = rc
			c := newClient(t, o)
			_, err := c.Resolve(testContext(t, 10*time.Second), reg.Host+"/app:v1")
			wantTooLarge(t, err, rc, remotelimit.Manifest.Max, 1<<10)
			before := rc.n.Load()
			_, err = c.Resolve(testContext(t, 10*time.Second), reg.Host+"/app@"+digestOf(t, img))
			rc.n.Add(-before)
			wantTooLarge(t, err, rc, remotelimit.Manifest.Max, 1<<10)
		})
	}
}

// TestTokenOverLimit: a token endpoint (the realm of the registry's
// challenge) that answers more than the token limit is cut there.
func TestTokenOverLimit(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			var host string
			reg := newTestRegistry(t, func(h http.Handler) http.Handler {
				token := inflated(func(r *http.Request) bool { return r.URL.Path == "/token" }, 4<<20, w.chunked)(h)
				return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
					if strings.HasPrefix(r.URL.Path, "/v2/") && r.Header.Get("Authorization") == "" {
						rw.Header().Set("WWW-Authenticate", `Bearer realm="http://`+host+`/token",service="test"`)
						rw.WriteHeader(http.StatusUnauthorized)
						return
					}
					token.ServeHTTP(rw, r)
				})
			})
			host = reg.Host
			rc := &readCounter{inner: http.DefaultTransport}
			o := fastOptions()
			o.Transport = rc
			_, err := newClient(t, o).Resolve(testContext(t, 10*time.Second), reg.Host+"/app:v1")
			wantTooLarge(t, err, rc, remotelimit.Token.Max, 1<<10)
		})
	}
}
