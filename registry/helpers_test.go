package registry

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// testPlatforms are the children of every test index.
var testPlatforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64", Variant: "v8"},
}

// testRegistry is go-containerregistry's in-process registry behind a
// counting handler; wrap (when set) sits between the two to inject faults.
type testRegistry struct {
	Host     string
	requests atomic.Int64
	heads    atomic.Int64
	srv      *httptest.Server
}

func (r *testRegistry) Requests() int64 { return r.requests.Load() }

// newTestRegistry starts the in-process registry. Fault injection is an
// http.Handler wrapper around the real registry (wrap may be nil).
func newTestRegistry(t testing.TB, wrap func(http.Handler) http.Handler) *testRegistry {
	t.Helper()
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	r := &testRegistry{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if req.Method == http.MethodHead {
			r.heads.Add(1)
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	r.Host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func testContext(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// pushOpts write to the test registry directly (not through Client).
func pushOpts() []remote.Option { return []remote.Option{remote.WithAuth(authn.Anonymous)} }

// pushImage pushes a random image and returns it.
func pushImage(t testing.TB, ref string) v1.Image {
	t.Helper()
	img, err := random.Image(256, 1)
	must(t, err)
	r, err := name.ParseReference(ref, name.Insecure)
	must(t, err)
	must(t, remote.Write(r, img, pushOpts()...))
	return img
}

// testIndex builds an OCI index from the images of random.Index, with
// linux/amd64 and linux/arm64/v8 children: the platforms are set on the
// index descriptors (mutate.AppendManifests), as buildx writes them.
func testIndex(t testing.TB) v1.ImageIndex {
	t.Helper()
	src, err := random.Index(256, 1, int64(len(testPlatforms)))
	must(t, err)
	im, err := src.IndexManifest()
	must(t, err)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, p := range testPlatforms {
		img, err := src.Image(im.Manifests[i].Digest)
		must(t, err)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return idx
}

func pushIndex(t testing.TB, ref string) v1.ImageIndex {
	t.Helper()
	idx := testIndex(t)
	r, err := name.ParseReference(ref, name.Insecure)
	must(t, err)
	must(t, remote.WriteIndex(r, idx, pushOpts()...))
	return idx
}

func digestOf(t testing.TB, x interface{ Digest() (v1.Hash, error) }) string {
	t.Helper()
	d, err := x.Digest()
	must(t, err)
	return d.String()
}

// fastOptions keep the fault tests quick.
func fastOptions() Options {
	return Options{Timeout: 5 * time.Second, Backoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Keychain: authn.NewMultiKeychain()}
}

func newClient(t testing.TB, o Options) *Client {
	t.Helper()
	c, err := New(o)
	must(t, err)
	return c
}

func randomImage() (v1.Image, error) { return random.Image(256, 1) }
