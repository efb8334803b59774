package registry

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/throughline-dev/throughline/exitcode"
)

func TestResolveIndex(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, nil)
	ref := reg.Host + "/demo/app:1.4.2"
	idx := pushIndex(t, ref)
	im, err := idx.IndexManifest()
	must(t, err)
	c := newClient(t, fastOptions())
	ctx := testContext(t, 10*time.Second)

	d, err := c.Resolve(ctx, ref)
	must(t, err)
	if d.Digest != digestOf(t, idx) || d.MediaType != string(types.OCIImageIndex) || !d.IsIndex() {
		t.Fatalf("Resolve = %s %s, want %s %s", d.Digest, d.MediaType, digestOf(t, idx), types.OCIImageIndex)
	}
	if d.Repository != reg.Host+"/demo/app" || d.Tag != "1.4.2" || d.Registry != reg.Host {
		t.Fatalf("Resolve names %q %q %q", d.Repository, d.Tag, d.Registry)
	}
	if got, want := d.Pinned(), ref+"@"+d.Digest; got != want {
		t.Fatalf("Pinned() = %s, want %s", got, want)
	}
	if len(d.Children) != 2 {
		t.Fatalf("children = %+v, want 2", d.Children)
	}
	for i, ch := range d.Children {
		if ch.Digest != im.Manifests[i].Digest.String() || ch.Platform.String() != testPlatforms[i].String() {
			t.Errorf("child %d = %s %s, want %s %s", i, ch.Platform, ch.Digest, testPlatforms[i], im.Manifests[i].Digest)
		}
		img, err := idx.Image(im.Manifests[i].Digest)
		must(t, err)
		cfg, err := img.ConfigName()
		must(t, err)
		if ch.ConfigDigest != cfg.String() {
			t.Errorf("child %s config = %s, want %s", ch.Platform, ch.ConfigDigest, cfg)
		}
		// ConfigDigest of the child by digest agrees.
		got, err := c.ConfigDigest(ctx, d.Repository+"@"+ch.Digest)
		must(t, err)
		if got != cfg.String() {
			t.Errorf("ConfigDigest(%s) = %s, want %s", ch.Digest, got, cfg)
		}
	}
	// linux/arm64 and linux/arm64/v8 are the same platform.
	for _, p := range []string{"linux/arm64", "linux/arm64/v8", "linux/aarch64"} {
		pl, err := ParsePlatform(p)
		must(t, err)
		ch, ok := d.ChildFor(pl)
		if !ok || ch.Digest != im.Manifests[1].Digest.String() {
			t.Errorf("ChildFor(%s) = %v %v, want the arm64/v8 child", p, ch, ok)
		}
	}
	if _, ok := d.ChildFor(Platform{OS: "linux", Architecture: "s390x"}); ok {
		t.Error("ChildFor(linux/s390x) found a child")
	}
	if _, err := c.ConfigDigest(ctx, ref); !errors.Is(err, ErrInvalid) {
		t.Errorf("ConfigDigest of an index: %v, want ErrInvalid", err)
	}
}

func TestResolveImageAndDigest(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, nil)
	ref := reg.Host + "/demo/single:v1"
	img := pushImage(t, ref)
	c := newClient(t, fastOptions())
	ctx := testContext(t, 10*time.Second)

	d, err := c.Resolve(ctx, ref)
	must(t, err)
	cfg, err := img.ConfigName()
	must(t, err)
	if d.Digest != digestOf(t, img) || d.ConfigDigest != cfg.String() || d.IsIndex() || len(d.Children) != 0 {
		t.Fatalf("Resolve = %+v, want digest %s config %s", d, digestOf(t, img), cfg)
	}
	before := reg.heads.Load()
	dd, err := c.ResolveDigest(ctx, ref)
	must(t, err)
	if dd.Digest != d.Digest || dd.MediaType != string(types.DockerManifestSchema2) {
		t.Fatalf("ResolveDigest = %s %s, want %s %s", dd.Digest, dd.MediaType, d.Digest, types.DockerManifestSchema2)
	}
	if reg.heads.Load() != before+1 {
		t.Fatalf("ResolveDigest sent %d HEAD requests, want 1", reg.heads.Load()-before)
	}
	ok, err := c.Exists(ctx, d.Repository+"@"+d.Digest)
	if err != nil || !ok {
		t.Fatalf("Exists = %v %v, want true", ok, err)
	}
	r, _ := name.ParseReference(d.Repository+"@"+d.Digest, name.Insecure)
	must(t, remote.Delete(r, pushOpts()...))
	ok, err = c.Exists(ctx, d.Repository+"@"+d.Digest)
	if err != nil || ok {
		t.Fatalf("Exists after delete = %v %v, want false, nil", ok, err)
	}
	if _, err := c.Exists(ctx, ref); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Exists(tag) = %v, want ErrInvalid", err)
	}
}

// TestHeadFallsBackToGet: a registry (or proxy) that does not answer HEAD
// still resolves, by GET. Fault injection: a handler wrapper.
func TestHeadFallsBackToGet(t *testing.T) {
	t.Parallel()
	var noHead atomic.Bool
	reg := newTestRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if noHead.Load() && r.Method == http.MethodHead {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	ref := reg.Host + "/demo/app:v1"
	img := pushImage(t, ref)
	noHead.Store(true)
	c := newClient(t, fastOptions())
	d, err := c.ResolveDigest(testContext(t, 10*time.Second), ref)
	must(t, err)
	if d.Digest != digestOf(t, img) {
		t.Fatalf("digest = %s, want %s", d.Digest, digestOf(t, img))
	}
}

// TestCacheByDigest: a digest whose manifests are cached on disk costs no
// request, even from a new Client; a tag always asks the registry.
func TestCacheByDigest(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, nil)
	ref := reg.Host + "/demo/app:v1"
	idx := pushIndex(t, ref)
	dir := t.TempDir()
	ctx := testContext(t, 10*time.Second)
	o := fastOptions()
	o.CacheDir = dir
	d, err := newClient(t, o).Resolve(ctx, ref)
	must(t, err)

	byDigest := d.Repository + "@" + digestOf(t, idx)
	c2 := newClient(t, o)
	before := reg.Requests()
	d2, err := c2.Resolve(ctx, byDigest)
	must(t, err)
	if n := reg.Requests() - before; n != 0 {
		t.Fatalf("cached digest cost %d requests, want 0", n)
	}
	if d2.Digest != d.Digest || len(d2.Children) != 2 || d2.Children[1].ConfigDigest != d.Children[1].ConfigDigest {
		t.Fatalf("cached resolve = %+v, want %+v", d2, d)
	}
	if _, err := c2.ResolveDigest(ctx, byDigest); err != nil || reg.Requests() != before {
		t.Fatalf("ResolveDigest of a cached digest: %v, %d requests", err, reg.Requests()-before)
	}
	// A tag is never answered from the cache.
	if _, err := c2.Resolve(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if reg.Requests() == before {
		t.Fatal("a tag was answered from the cache")
	}
	// A corrupt entry is a miss, and is replaced.
	h := digestOf(t, idx)[len("sha256:"):]
	p := filepath.Join(dir, "manifests", "sha256", h+".json")
	must(t, os.WriteFile(p, []byte(`{"mediaType":"x","manifest":"e30="}`), 0o644))
	before = reg.Requests()
	if _, err := newClient(t, o).Resolve(ctx, byDigest); err != nil {
		t.Fatal(err)
	}
	if reg.Requests() == before {
		t.Fatal("a corrupt cache entry was trusted")
	}
}

// TestAuth: a registry that wants basic auth answers 401 without
// credentials, and resolves with the credentials of the Docker config in
// $DOCKER_CONFIG (read through authn.DefaultKeychain).
func TestAuth(t *testing.T) {
	const user, pass = "ci", "s3cret"
	reg := newTestRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	ref := reg.Host + "/private/app:v1"
	img, r := pushAuthed(t, ref, user, pass)
	_ = r
	ctx := testContext(t, 10*time.Second)

	_, err := newClient(t, fastOptions()).ResolveDigest(ctx, ref)
	var re *Error
	if !errors.Is(err, ErrUnauthorized) || !errors.As(err, &re) || re.Reference != ref {
		t.Fatalf("anonymous: %v, want ErrUnauthorized naming %s", err, ref)
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Host, base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
	must(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600))
	t.Setenv("DOCKER_CONFIG", dir)
	o := fastOptions()
	o.Keychain = nil // the default keychain
	d, err := newClient(t, o).Resolve(ctx, ref)
	must(t, err)
	if d.Digest != digestOf(t, img) {
		t.Fatalf("digest = %s, want %s", d.Digest, digestOf(t, img))
	}
}

func pushAuthed(t *testing.T, ref, user, pass string) (v1.Image, name.Reference) {
	t.Helper()
	img := mustRandomImage(t)
	r, err := name.ParseReference(ref, name.Insecure)
	must(t, err)
	must(t, remote.Write(r, img, remote.WithAuth(&authn.Basic{Username: user, Password: pass})))
	return img, r
}

// TestFaults: each bad answer maps to the kind a caller branches on, names
// the reference, and never hangs. Faults are injected by http.Handler
// wrappers around the real in-process registry.
func TestFaults(t *testing.T) {
	var storm, flakes atomic.Int64
	reg := newTestRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case strings.HasPrefix(r.URL.Path, "/v2/storm/"):
				storm.Add(1)
				w.Header().Set("Retry-After", "0")
				http.Error(w, `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`, http.StatusTooManyRequests)
			case strings.HasPrefix(r.URL.Path, "/v2/broken/") && strings.Contains(r.URL.Path, "/manifests/"):
				body := []byte(`{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": "nope"`)
				w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
				w.Header().Set("Content-Length", fmt.Sprint(len(body)))
				w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("a", 64))
				if r.Method != http.MethodHead {
					_, _ = w.Write(body)
				}
			case strings.HasPrefix(r.URL.Path, "/v2/flaky/") && strings.Contains(r.URL.Path, "/manifests/") &&
				r.Method == http.MethodGet && flakes.Add(1)%2 == 1:
				http.Error(w, "try again", http.StatusServiceUnavailable)
			default:
				h.ServeHTTP(w, r)
			}
		})
	})
	ctx := testContext(t, 30*time.Second)
	pushImage(t, reg.Host+"/demo/app:v1")
	flaky := pushImage(t, reg.Host+"/flaky/app:v1")
	idx := pushIndex(t, reg.Host+"/demo/multi:v1")
	im, err := idx.IndexManifest()
	must(t, err)
	child, _ := name.ParseReference(reg.Host+"/demo/multi@"+im.Manifests[1].Digest.String(), name.Insecure)
	must(t, remote.Delete(child, pushOpts()...))

	missing := reg.Host + "/demo/app@sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		name, ref string
		full      bool
		want      error
		contains  string // in the message, besides the reference (errors.As *Error)
	}{
		{"unknown host", "registry.invalid/app:v1", false, ErrUnreachable, ""},
		{"tag 404", reg.Host + "/demo/app:nope", false, ErrNotFound, ""},
		{"tag 404 get", reg.Host + "/demo/app:nope", true, ErrNotFound, ""},
		{"repository 404", reg.Host + "/demo/none:v1", true, ErrNotFound, ""},
		{"digest 404", missing, false, ErrNotFound, ""},
		{"digest 404 get", missing, true, ErrNotFound, ""},
		{"429 storm", reg.Host + "/storm/app:v1", false, ErrUnreachable, ""},
		{"malformed manifest", reg.Host + "/broken/app:v1", true, ErrInvalid, "malformed manifest"},
		{"index names a missing child", reg.Host + "/demo/multi:v1", true, ErrInvalid, im.Manifests[1].Digest.String()},
		{"bad reference", "UPPER/Case:v1", false, ErrInvalid, ""},
		{"bad digest", reg.Host + "/demo/app@sha256:abc", false, ErrInvalid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storm.Store(0)
			c := newClient(t, fastOptions())
			var err error
			if tc.full {
				_, err = c.Resolve(ctx, tc.ref)
			} else {
				_, err = c.ResolveDigest(ctx, tc.ref)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			for _, other := range []error{ErrNotFound, ErrUnauthorized, ErrUnreachable, ErrInvalid} {
				if !errors.Is(tc.want, other) && errors.Is(err, other) {
					t.Errorf("err %v is also %v", err, other)
				}
			}
			var re *Error
			if !errors.As(err, &re) || re.Reference != tc.ref {
				t.Errorf("err %v: want a *registry.Error of reference %s", err, tc.ref)
			}
			if tc.name == "429 storm" && (re == nil || re.StatusCode() != http.StatusTooManyRequests) {
				t.Errorf("err %v: want status 429", err)
			}
			// Untyped: the manifest's problem, the missing child's digest.
			if tc.contains != "" && !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("err %q does not contain %q", err, tc.contains)
			}
			// Only an outage is "not decided, try again" (5), for every
			// caller that returns the error as it is.
			want := exitcode.Internal
			if errors.Is(tc.want, ErrUnreachable) {
				want = exitcode.Pending
			}
			if got := exitcode.Code(err); got != want {
				t.Errorf("exit code %d, want %d: %v", got, want, err)
			}
		})
	}
	t.Run("429 storm is bounded", func(t *testing.T) {
		storm.Store(0)
		o := fastOptions()
		o.Attempts = 4
		_, err := newClient(t, o).ResolveDigest(ctx, reg.Host+"/storm/app:v1")
		if !errors.Is(err, ErrUnreachable) {
			t.Fatalf("err = %v", err)
		}
		// Pings of /v2/ are not under /v2/storm/: only the HEAD is counted.
		if n := storm.Load(); n != 4 {
			t.Fatalf("storm saw %d requests, want exactly Attempts=4", n)
		}
		var re *Error
		if !errors.As(err, &re) || re.StatusCode() != http.StatusTooManyRequests {
			t.Fatalf("err %v: want status 429", err)
		}
	})
	t.Run("503 then ok is retried", func(t *testing.T) {
		storm.Store(0)
		d, err := newClient(t, fastOptions()).Resolve(ctx, reg.Host+"/flaky/app:v1")
		must(t, err)
		if d.Digest != digestOf(t, flaky) {
			t.Fatalf("digest %s, want %s", d.Digest, digestOf(t, flaky))
		}
	})
	t.Run("retries honour the context", func(t *testing.T) {
		o := fastOptions()
		o.Attempts, o.Backoff, o.MaxBackoff = 100, time.Second, time.Second
		short := testContext(t, 300*time.Millisecond)
		start := time.Now()
		_, err := newClient(t, o).ResolveDigest(short, reg.Host+"/storm/app:v1")
		if !errors.Is(err, ErrUnreachable) || time.Since(start) > 5*time.Second {
			t.Fatalf("err = %v after %s", err, time.Since(start))
		}
	})
}

// TestNeverAnswers: a registry that accepts connections and never replies
// fails with ErrUnreachable at the timeout instead of hanging.
func TestNeverAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // hold it open, say nothing
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	o := fastOptions()
	o.Timeout = 300 * time.Millisecond
	start := time.Now()
	ref := ln.Addr().String() + "/app:v1"
	_, err = newClient(t, o).ResolveDigest(testContext(t, 20*time.Second), ref)
	var re *Error
	if !errors.Is(err, ErrUnreachable) || !errors.As(err, &re) || re.Reference != ref {
		t.Fatalf("err = %v, want ErrUnreachable naming %s", err, ref)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("took %s; the timeout is 300ms", el)
	}
}

type recordingTransport struct {
	mu   sync.Mutex
	urls []string
}

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.urls = append(r.urls, req.URL.Scheme+"://"+req.URL.Host)
	return nil, errors.New("no network in this test")
}

func (r *recordingTransport) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.urls...)
}

// TestPlainHTTPOnlyForLoopback: go-containerregistry would fall back to
// plain HTTP for RFC 1918 addresses; throughline does only for loopback or
// when asked.
func TestPlainHTTPOnlyForLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ref       string
		insecure  bool
		wantPlain bool
	}{
		{"10.1.2.3:5000/app:v1", false, false},
		{"192.168.1.10/app:v1", false, false},
		{"registry.example.test/app:v1", false, false},
		{"10.1.2.3:5000/app:v1", true, true},
		{"127.0.0.1:5000/app:v1", false, true},
		{"localhost:5000/app:v1", false, true},
		{"[::1]:5000/app:v1", false, true},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			t.Parallel()
			rt := &recordingTransport{}
			o := fastOptions()
			o.Transport, o.Insecure, o.Concurrency = rt, tc.insecure, 1
			_, err := newClient(t, o).ResolveDigest(testContext(t, 5*time.Second), tc.ref)
			if !errors.Is(err, ErrUnreachable) {
				t.Fatalf("err = %v", err)
			}
			plain := false
			for _, u := range rt.seen() {
				plain = plain || strings.HasPrefix(u, "http://")
			}
			if plain != tc.wantPlain {
				t.Fatalf("plain HTTP attempted = %v, want %v (%v)", plain, tc.wantPlain, rt.seen())
			}
		})
	}
}

func TestParseReference(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ref, repo, registry, id string
		insecure                bool
		bad                     bool
	}{
		{ref: "nginx", repo: "index.docker.io/library/nginx", registry: "index.docker.io", id: "latest"},
		{ref: "nginx:1.27", repo: "index.docker.io/library/nginx", registry: "index.docker.io", id: "1.27"},
		{ref: "docker.io/library/nginx:1.27", repo: "index.docker.io/library/nginx", registry: "index.docker.io", id: "1.27"},
		{ref: "bitnami/redis:7", repo: "index.docker.io/bitnami/redis", registry: "index.docker.io", id: "7"},
		{ref: "registry.example.test:5000/team/app:v1", repo: "registry.example.test:5000/team/app", registry: "registry.example.test:5000", id: "v1"},
		{ref: "localhost:5000/app:v1", repo: "localhost:5000/app", registry: "localhost:5000", id: "v1", insecure: true},
		{ref: "localhost/app:v1", repo: "localhost/app", registry: "localhost", id: "v1", insecure: true},
		{ref: "127.0.0.1:5000/app:v1", repo: "127.0.0.1:5000/app", registry: "127.0.0.1:5000", id: "v1", insecure: true},
		{ref: "[::1]:5000/app", repo: "[::1]:5000/app", registry: "[::1]:5000", id: "latest", insecure: true},
		{ref: "[::1]:5000/app@sha256:" + strings.Repeat("a", 64), repo: "[::1]:5000/app", registry: "[::1]:5000", id: "sha256:" + strings.Repeat("a", 64), insecure: true},
		{ref: "ghcr.io/org/app:1.4.2@sha256:" + strings.Repeat("b", 64), repo: "ghcr.io/org/app", registry: "ghcr.io", id: "sha256:" + strings.Repeat("b", 64)},
		{ref: "", bad: true},
		{ref: " nginx", bad: true},
		{ref: "Nginx:1", bad: true},
		{ref: "app@sha256:short", bad: true},
		{ref: "app:bad tag", bad: true},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			t.Parallel()
			r, err := ParseReference(tc.ref, false)
			if tc.bad {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			must(t, err)
			if r.Context().Name() != tc.repo || r.Context().RegistryStr() != tc.registry || r.Identifier() != tc.id {
				t.Fatalf("= %s %s %s, want %s %s %s", r.Context().Name(), r.Context().RegistryStr(), r.Identifier(), tc.repo, tc.registry, tc.id)
			}
			if got := r.Context().Scheme() == "http"; got != tc.insecure {
				t.Fatalf("plain HTTP allowed = %v, want %v", got, tc.insecure)
			}
		})
	}
}

func TestPlatformEqual(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"linux/arm64", "linux/arm64/v8", true},
		{"linux/arm64/v8", "linux/arm64", true},
		{"linux/aarch64", "linux/arm64", true},
		{"linux/amd64", "linux/amd64/v1", true},
		{"linux/x86_64", "linux/amd64", true},
		{"linux/arm", "linux/arm/v7", true},
		{"linux/arm/v6", "linux/arm/v7", false},
		{"linux/arm64", "linux/amd64", false},
		{"linux/amd64", "windows/amd64", false},
		{"linux/amd64/v2", "linux/amd64", false},
	} {
		a, err := ParsePlatform(tc.a)
		must(t, err)
		b, err := ParsePlatform(tc.b)
		must(t, err)
		if got := a.Equal(b); got != tc.want {
			t.Errorf("%s == %s: %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	for _, bad := range []string{"", "linux", "linux/", "/amd64", "a/b/c/d"} {
		if _, err := ParsePlatform(bad); err == nil {
			t.Errorf("ParsePlatform(%q) accepted", bad)
		}
	}
}

func TestResolveAllBoundsConcurrency(t *testing.T) {
	t.Parallel()
	var inFlight, peak atomic.Int64
	reg := newTestRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
			h.ServeHTTP(w, r)
		})
	})
	var refs []string
	for i := range 24 {
		ref := fmt.Sprintf("%s/repo%d/app:v1", reg.Host, i%4)
		if i < 4 {
			pushImage(t, ref)
		}
		refs = append(refs, ref)
	}
	peak.Store(0)
	o := fastOptions()
	o.Concurrency = 3
	res := newClient(t, o).ResolveAll(testContext(t, 20*time.Second), refs, true)
	for i, r := range res {
		if r.Err != nil || r.Descriptor.Reference != refs[i] {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	if p := peak.Load(); p > 3 {
		t.Fatalf("peak requests in flight = %d, want <= 3", p)
	}
}

func mustRandomImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := randomImage()
	must(t, err)
	return img
}

// TestDockerHubShortName: nginx is index.docker.io/library/nginx:latest,
// asked over HTTPS only (seen by a recording transport; no network).
func TestDockerHubShortName(t *testing.T) {
	t.Parallel()
	rt := &recordingTransport{}
	o := fastOptions()
	o.Transport = rt
	_, err := newClient(t, o).ResolveDigest(testContext(t, 5*time.Second), "nginx")
	var re *Error
	if !errors.As(err, &re) || re.Reference != "nginx" || !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v", err)
	}
	if urls := rt.seen(); len(urls) == 0 || urls[0] != "https://index.docker.io" {
		t.Fatalf("requests went to %v, want https://index.docker.io", urls)
	}
	r, err := ParseReference("nginx", false)
	must(t, err)
	if r.String() != "index.docker.io/library/nginx:latest" && r.Name() != "index.docker.io/library/nginx:latest" {
		t.Fatalf("nginx parsed as %s", r.Name())
	}
}

// TestIPv6Loopback resolves through a registry listening on [::1] (skipped
// where the machine has no IPv6 loopback).
func TestIPv6Loopback(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	reg := newTestRegistry(t, nil)
	srv := &http.Server{Handler: reg.srv.Config.Handler}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	host := ln.Addr().String() // [::1]:port
	img := pushImage(t, host+"/app:v1")
	d, err := newClient(t, fastOptions()).Resolve(testContext(t, 10*time.Second), host+"/app:v1")
	must(t, err)
	if d.Digest != digestOf(t, img) || d.Registry != host {
		t.Fatalf("Resolve = %+v, want %s at %s", d, digestOf(t, img), host)
	}
}
