package chartsource_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/chartfixture"
	"github.com/throughline-dev/throughline/remotelimit"
)

// marker is what an inflated response is made of: no error may echo it.
const marker = "inflated-by-the-server "

// inflate answers the GETs match selects with size bytes of marker, with
// an honest Content-Length or chunked; everything else goes to h.
func inflate(h http.Handler, match func(*http.Request) bool, size int, chunked bool) http.Handler {
	chunk := bytes.Repeat([]byte(marker), (32<<10)/len(marker)+1)[:32<<10]
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

// wantTooLarge fails unless err is the remote limit's refusal (exit 3,
// rule chart-too-large) with the process having read at most limit+1
// bytes of the oversized body (+ the other, small, responses: slack).
func wantTooLarge(t *testing.T, err error, rc *readCounter, limit, slack int64) {
	t.Helper()
	t.Logf("exit %d: %v", exitcode.Code(err), err)
	if !errors.Is(err, remotelimit.ErrTooLarge) {
		t.Fatalf("want remotelimit.ErrTooLarge, got exit %d: %v", exitcode.Code(err), err)
	}
	var r *exitcode.Refusal
	if !errors.As(err, &r) || r.Rule != chartsource.RuleChartTooLarge {
		t.Errorf("want refusal %s, got exit %d: %v", chartsource.RuleChartTooLarge, exitcode.Code(err), err)
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

// inflatedRegistry is the in-process registry holding one chart, behind
// inflate, and the chart's manifest digest and package.
func inflatedRegistry(t *testing.T, match func(*http.Request) bool, size int, chunked bool) (host, digest string, pkg []byte) {
	t.Helper()
	reg := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(reg)
	t.Cleanup(srv.Close)
	host = strings.TrimPrefix(srv.URL, "http://")
	pkg = chartTgz(t, "podinfo", "6.7.1", "x")
	digest = pushChart(t, host, "charts", pkg)
	srv.Config.Handler = inflate(reg, match, size, chunked)
	return host, digest, pkg
}

// TestOCIManifestOverLimit: a manifest above 4 MiB is refused before
// go-containerregistry buffers it (it would read up to 100 MiB).
func TestOCIManifestOverLimit(t *testing.T) {
	const size = 12 << 20
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			host, digest, _ := inflatedRegistry(t, func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/manifests/") }, size, w.chunked)
			rc := &readCounter{inner: http.DefaultTransport}
			ref := chartsource.Ref{Repo: "oci://" + host + "/charts", Name: "podinfo", Version: "6.7.1"}
			_, err := fetcher(t.TempDir(), func(o *chartsource.Options) { o.Transport = rc }).
				Fetch(context.Background(), chartsource.Entry{Repo: ref.Repo, Name: ref.Name, Version: ref.Version, Digest: digest})
			wantTooLarge(t, err, rc, remotelimit.Manifest.Max, 4<<10)
		})
	}
}

// TestOCIChartLayerOverLimit: a chart layer that runs over MaxChartSize
// (whatever its descriptor says) is cut at the limit.
func TestOCIChartLayerOverLimit(t *testing.T) {
	const limit = 256 << 10
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			var layer string
			host, digest, pkg := inflatedRegistry(t, func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/blobs/"+layer) }, 4*limit, w.chunked)
			layer = sha(pkg)
			rc := &readCounter{inner: http.DefaultTransport}
			ref := chartsource.Ref{Repo: "oci://" + host + "/charts", Name: "podinfo", Version: "6.7.1"}
			_, err := fetcher(t.TempDir(), func(o *chartsource.Options) { o.Transport = rc; o.MaxChartSize = limit }).
				Fetch(context.Background(), chartsource.Entry{Repo: ref.Repo, Name: ref.Name, Version: ref.Version, Digest: digest})
			wantTooLarge(t, err, rc, limit, 16<<10)
		})
	}
}

// TestHTTPIndexOverLimit: an index.yaml above MaxIndexSize is refused on
// the wire.
func TestHTTPIndexOverLimit(t *testing.T) {
	const limit = 256 << 10
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			repo := chartfixture.StartRepo(t)
			pkg := chartTgz(t, "web", "1.2.3", "x")
			repo.Publish(t, [][]byte{pkg}, "", "")
			repo.Server.Config.Handler = inflate(repo.Server.Config.Handler,
				func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/index.yaml") }, 4*limit, w.chunked)
			rc := &readCounter{inner: http.DefaultTransport}
			_, err := fetcher(t.TempDir(), func(o *chartsource.Options) { o.Transport = rc; o.MaxIndexSize = limit }).
				Fetch(context.Background(), chartsource.Entry{Repo: repo.URL(), Name: "web", Version: "1.2.3", Digest: sha(pkg)})
			wantTooLarge(t, err, rc, limit, 0)
		})
	}
}

// TestHTTPPackageOverLimit: a package above MaxChartSize is refused on
// the wire.
func TestHTTPPackageOverLimit(t *testing.T) {
	const limit = 256 << 10
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			repo := chartfixture.StartRepo(t)
			pkg := chartTgz(t, "web", "1.2.3", "x")
			repo.Publish(t, [][]byte{pkg}, "", "")
			repo.Server.Config.Handler = inflate(repo.Server.Config.Handler,
				func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, ".tgz") }, 4*limit, w.chunked)
			rc := &readCounter{inner: http.DefaultTransport}
			_, err := fetcher(t.TempDir(), func(o *chartsource.Options) { o.Transport = rc; o.MaxChartSize = limit }).
				Fetch(context.Background(), chartsource.Entry{Repo: repo.URL(), Name: "web", Version: "1.2.3", Digest: sha(pkg)})
			wantTooLarge(t, err, rc, limit, 16<<10)
		})
	}
}
