package remotelimit_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/throughline-dev/throughline/remotelimit"
)

// secret is what every served body is made of: no error may echo it.
const secret = "s3cr3t-body-"

// counting counts the body bytes the process took from the connection.
type counting struct {
	inner http.RoundTripper
	n     atomic.Int64
}

func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.inner.RoundTrip(req)
	if err == nil {
		resp.Body = &countBody{ReadCloser: resp.Body, n: &c.n}
	}
	return resp, err
}

type countBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// serve answers every request with size bytes, with an honest
// Content-Length or chunked.
func serve(t *testing.T, size int, chunked bool) *httptest.Server {
	t.Helper()
	body := bytes.Repeat([]byte(secret), size/len(secret)+1)[:size]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !chunked {
			w.Header().Set("Content-Length", strconv.Itoa(size))
		}
		for off := 0; off < size; off += 32 << 10 {
			if _, err := w.Write(body[off:min(off+32<<10, size)]); err != nil {
				return
			}
			if chunked {
				w.(http.Flusher).Flush()
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestBodyOverLimitRefused(t *testing.T) {
	const limit = 256 << 10
	for _, tt := range []struct {
		name     string
		size     int
		chunked  bool
		wantErr  bool
		declared bool
	}{
		{"content-length over", limit + 1, false, true, true},
		{"chunked over", 4 * limit, true, true, false},
		{"chunked one byte over", limit + 1, true, true, false},
		{"content-length at the limit", limit, false, false, false},
		{"chunked at the limit", limit, true, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, tt.size, tt.chunked)
			c := &counting{inner: http.DefaultTransport}
			l := remotelimit.Limit{Kind: "test thing", Max: limit}
			client := &http.Client{Transport: remotelimit.New(c, remotelimit.Fixed(l))}
			u := strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1) + "/a/b?token=qwerty#frag"
			var data []byte
			resp, err := client.Get(u)
			if err == nil {
				data, err = io.ReadAll(resp.Body)
				_ = resp.Body.Close()
			}
			if !tt.wantErr {
				if err != nil || len(data) != tt.size {
					t.Fatalf("read %d bytes, err %v; want %d bytes", len(data), err, tt.size)
				}
				return
			}
			if !errors.Is(err, remotelimit.ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			var te *remotelimit.TooLargeError
			if !errors.As(err, &te) || te.Limit != l || (te.Declared >= 0) != tt.declared {
				t.Fatalf("err = %#v", te)
			}
			if got := c.n.Load(); got > limit+1 {
				t.Errorf("the process read %d body bytes, limit %d", got, limit)
			}
			if tt.declared && c.n.Load() != 0 {
				t.Errorf("read %d body bytes of a response refused by its Content-Length", c.n.Load())
			}
			// http.Client's *url.Error names the URL as asked; ours does not.
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q echoes the body", err)
			}
			for _, leak := range []string{secret, "hunter2", "qwerty", "frag"} {
				if strings.Contains(te.Error(), leak) {
					t.Errorf("error %q contains %q", te, leak)
				}
			}
			if want := srv.URL + "/a/b"; te.URL != want {
				t.Errorf("URL = %q, want %q", te.URL, want)
			}
		})
	}
}

func TestHeadNotChecked(t *testing.T) {
	t.Parallel()
	srv := serve(t, 1<<20, false)
	client := &http.Client{Transport: remotelimit.New(nil, remotelimit.Fixed(remotelimit.Limit{Kind: "x", Max: 10}))}
	resp, err := client.Head(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
}

func TestRegistryPolicy(t *testing.T) {
	t.Parallel()
	blob := remotelimit.Blob(20 << 20)
	p := remotelimit.Registry(blob)
	for _, tt := range []struct {
		url  string
		want remotelimit.Limit
	}{
		{"https://r.example/v2/", remotelimit.Token},
		{"https://r.example/v2/a/b/manifests/sha256:00", remotelimit.Manifest},
		{"https://r.example/v2/a/manifests/v1", remotelimit.Manifest},
		{"https://r.example/v2/a/referrers/sha256:00", remotelimit.Manifest},
		{"https://r.example/v2/a/blobs/sha256:00", blob},
		{"https://r.example/v2/a/tags/list", remotelimit.Token},
		{"https://auth.example/token?scope=x", remotelimit.Token},
		{"https://auth.example/blobs/x", remotelimit.Token}, // not a distribution path
	} {
		req, _ := http.NewRequest(http.MethodGet, tt.url, nil)
		if got := p(req); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.url, got, tt.want)
		}
	}
	// A blob redirected to storage elsewhere stays a blob; a token
	// endpoint redirected to a blob path stays a token.
	orig, _ := http.NewRequest(http.MethodGet, "https://r.example/v2/a/blobs/sha256:00", nil)
	next, _ := http.NewRequest(http.MethodGet, "https://storage.example/x/y?sig=1", nil)
	next.Response = &http.Response{Request: orig}
	if got := p(next); got != blob {
		t.Errorf("redirected blob: %v", got)
	}
	tok, _ := http.NewRequest(http.MethodGet, "https://auth.example/token", nil)
	next2, _ := http.NewRequest(http.MethodGet, "https://r.example/v2/a/blobs/sha256:00", nil)
	next2.Response = &http.Response{Request: tok}
	if got := p(next2); got != remotelimit.Token {
		t.Errorf("redirected token: %v", got)
	}
}

func TestErrorWording(t *testing.T) {
	t.Parallel()
	e := &remotelimit.TooLargeError{URL: "https://r.example/v2/a/manifests/v1", Limit: remotelimit.Manifest, Declared: 99614720}
	if got, want := e.Error(), "OCI manifest https://r.example/v2/a/manifests/v1: Content-Length 99614720 exceeds the 4194304 byte limit"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	e.Declared = -1
	if got, want := e.Error(), "OCI manifest https://r.example/v2/a/manifests/v1: more than the 4194304 byte limit was sent"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
