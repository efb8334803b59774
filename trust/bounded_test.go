package trust

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/throughline-dev/throughline/remotelimit"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

const marker = "inflated-by-the-server "

// inflatingProxy is a proxy to the registry at target that answers the
// GETs match selects with size bytes of marker (Content-Length or
// chunked). It returns the proxy's host:port.
func inflatingProxy(t *testing.T, target string, match func(*http.Request) bool, size int, chunked bool) string {
	t.Helper()
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	chunk := bytes.Repeat([]byte(marker), (32<<10)/len(marker)+1)[:32<<10]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !match(r) {
			rp.ServeHTTP(w, r)
			return
		}
		if !chunked {
			w.Header().Set("Content-Length", strconv.Itoa(size))
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
		for left := size; left > 0; left -= len(chunk) {
			if _, err := w.Write(chunk[:min(left, len(chunk))]); err != nil {
				return
			}
			if chunked {
				w.(http.Flusher).Flush()
			}
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

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

// TestRegistryReadsBounded: the referrers list (a manifest) and a bundle
// blob served over their limits are cut there, whether the caller gives
// a base transport, a transport of its own in Remote (replaced), or a
// Session.
func TestRegistryReadsBounded(t *testing.T) {
	w := trusttest.New(t, true)
	img := w.Image("app")
	ev := w.CIEvidence(img)
	w.Attach(img, ev.All()...)
	pol := policyOf(w, "staging", trusttest.KeyPolicy(stagingAge))
	var digests []string
	for _, b := range ev.All() {
		digests = append(digests, trusttest.DigestOf(b))
	}
	referrers := func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/referrers/") }
	blobs := func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/blobs/") }
	for _, tc := range []struct {
		name   string
		match  func(*http.Request) bool
		limit  int64
		verify func(ctx context.Context, image string, o Options) error
	}{
		{"referrers", referrers, remotelimit.Manifest.Max, func(ctx context.Context, image string, o Options) error {
			_, err := Verify(ctx, pol, image, o)
			return err
		}},
		{"bundle blob", blobs, maxBundleSize, func(ctx context.Context, image string, o Options) error {
			_, err := VerifyRecorded(ctx, pol, image, digests, o)
			return err
		}},
	} {
		for _, chunked := range []bool{false, true} {
			for _, how := range []string{"transport", "remote option", "session"} {
				t.Run(tc.name+"/"+strconv.FormatBool(chunked)+"/"+how, func(t *testing.T) {
					host := inflatingProxy(t, w.Host, tc.match, 12<<20, chunked)
					image := strings.Replace(img.String(), w.Host, host, 1)
					rc := &readCounter{inner: http.DefaultTransport}
					o := Options{Now: w.Now}
					switch how {
					case "transport":
						o.Transport = rc
					case "remote option": // a caller's own transport cannot skip the bound
						o.Remote = []remote.Option{remote.WithTransport(rc)}
					case "session":
						s, err := NewSession([]string{image}, nil, rc)
						if err != nil {
							t.Fatal(err)
						}
						o.Session = s
					}
					err := tc.verify(context.Background(), image, o)
					t.Logf("%v", err)
					if !errors.Is(err, remotelimit.ErrTooLarge) {
						t.Fatalf("want remotelimit.ErrTooLarge, got %v", err)
					}
					if n := rc.n.Load(); n > tc.limit+1+64<<10 {
						t.Errorf("the process read %d response bytes, limit %d", n, tc.limit)
					}
					if strings.Contains(err.Error(), strings.TrimSpace(marker)) {
						t.Errorf("the error echoes the response: %.300s", err)
					}
				})
			}
		}
	}
}
