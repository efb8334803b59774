package trust

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

// gate is n images, each in its own repository of a real registry
// (Debian's docker-registry, CNCF distribution 2.8: no referrers API) with
// CI's four bundles attached, and a client that counts its requests;
// bearer: the client reaches the registry through a proxy playing a
// registry's token service (every request needs a bearer token).
type gate struct {
	w       *trusttest.World
	imgs    []name.Digest
	counter *trusttest.Counter
	staging *Policy
	prod    *Policy
}

func newGate(tb testing.TB, n int, referrers, bearer bool) *gate {
	tb.Helper()
	reg := testenv.StartRegistry(tb, testenv.RegistryOptions{})
	g := &gate{w: trusttest.NewAt(tb, reg.Host, referrers), counter: &trusttest.Counter{}}
	host := reg.Host
	if bearer {
		host = bearerProxy(tb, reg.Host)
	}
	for i := range n {
		img := g.w.Image(fmt.Sprintf("app%02d", i))
		g.w.Attach(img, g.w.CIEvidence(img).All()...)
		ref, err := name.NewDigest(strings.Replace(img.String(), reg.Host, host, 1))
		if err != nil {
			tb.Fatal(err)
		}
		g.imgs = append(g.imgs, ref)
	}
	g.staging = policyOf(g.w, "staging", trusttest.KeyPolicy(stagingAge))
	g.prod = policyOf(g.w, "production", trusttest.KeyPolicy(productionAge))
	return g
}

// bearerProxy plays a registry's token service in front of the registry
// at target (a test stand-in: it grants any scope): a request without its
// bearer token gets 401 with a Bearer challenge naming its /token, which
// issues the token. It returns the proxy's host:port.
func bearerProxy(tb testing.TB, target string) string {
	tb.Helper()
	const token = "gate-token"
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: target})
	var realm string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/token":
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"token": %q}`, token)
		case r.Header.Get("Authorization") != "Bearer "+token:
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q,service="gate"`, realm))
			w.WriteHeader(http.StatusUnauthorized)
		default:
			r.Header.Del("Authorization")
			rp.ServeHTTP(w, r)
		}
	}))
	tb.Cleanup(srv.Close)
	realm = srv.URL + "/token"
	return strings.TrimPrefix(srv.URL, "http://")
}

// opts are counted registry options with cache dir (empty: none).
func (g *gate) opts(cacheDir string) Options {
	return Options{Transport: g.counter, CacheDir: cacheDir, Now: g.w.Now,
		SourceCommit: trusttest.SourceCommit}
}

// candidacy discovers and verifies every image against staging and
// returns the evidence (sealed with opts.Seal).
func (g *gate) candidacy(tb testing.TB, opts Options) []*Evidence {
	tb.Helper()
	out := make([]*Evidence, 0, len(g.imgs))
	for _, img := range g.imgs {
		ev, err := Verify(context.Background(), g.staging, img.String(), opts)
		if err != nil {
			tb.Fatalf("candidacy of %s: %v", img, err)
		}
		out = append(out, ev)
	}
	return out
}

// recheck re-verifies every image's recorded evidence against production,
// as a gate does: through one Session for the gate when session, with the
// evidence manifest when withManifest.
func (g *gate) recheck(tb testing.TB, evs []*Evidence, opts Options, session, withManifest bool) {
	tb.Helper()
	var s *Session
	if session {
		refs := make([]string, 0, len(g.imgs))
		for _, img := range g.imgs {
			refs = append(refs, img.String())
		}
		var err error
		if s, err = NewSession(refs, nil, g.counter); err != nil {
			tb.Fatal(err)
		}
	}
	for i, img := range g.imgs {
		o := opts
		o.Session = s
		if withManifest {
			o.Manifest = evs[i].Manifest
		}
		if _, err := VerifyRecorded(context.Background(), g.prod, img.String(), evs[i].Digests(), o); err != nil {
			tb.Fatalf("gate on %s: %v", img, err)
		}
	}
}

// perImage is the counter's total per image, then resets it; it logs
// the counts by kind.
func (g *gate) perImage(tb testing.TB) float64 {
	tb.Helper()
	n := float64(g.counter.Total()) / float64(len(g.imgs))
	tb.Logf("%d images: %s", len(g.imgs), g.counter)
	g.counter.Reset()
	return n
}

type layout struct {
	name      string
	referrers bool
	bearer    bool
}

var layouts = []layout{
	{"referrers", true, false}, {"tags", false, false}, {"referrers+bearer", true, true}, {"tags+bearer", false, true},
}

// TestGateRoundTrips counts the registry requests of candidacy (Verify)
// and of a later gate (VerifyRecorded) per image, cold and warm, for
// bundles attached as referrers (cosign's bundle format) and under
// cosign's tags, on an anonymous registry and behind a bearer token
// service. A gate re-verifying the recorded evidence through one Session
// with its evidence manifest makes at most 2 requests per image cold (the
// manifest, and its share of the registry's handshake) and none warm.
func TestGateRoundTrips(t *testing.T) {
	t.Parallel()
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			const n = 5
			g := newGate(t, n, l.referrers, l.bearer)
			cand := g.opts(t.TempDir())
			g.candidacy(t, cand)
			t.Logf("candidacy, discovery cold: %.1f requests/image", g.perImage(t))
			g.candidacy(t, cand)
			t.Logf("candidacy, discovery warm: %.1f requests/image", g.perImage(t))
			sealOpts := g.opts("")
			sealOpts.Seal = true
			evs := g.candidacy(t, sealOpts)
			t.Logf("candidacy, discovery cold + seal (pushes included): %.1f requests/image", g.perImage(t))
			for i, ev := range evs {
				if ev.Manifest == "" {
					t.Fatalf("sealed evidence of %s names no manifest", g.imgs[i])
				}
			}

			g.recheck(t, evs, g.opts(""), false, false)
			handshake := 1.0
			if l.bearer {
				handshake = 2
			}
			if blobs := g.perImage(t); blobs > handshake+4 {
				t.Errorf("gate by recorded digests: %.1f requests/image cold, want at most a handshake and one per bundle", blobs)
			}
			cache := t.TempDir()
			g.recheck(t, evs, g.opts(cache), true, true)
			cold := g.perImage(t)
			t.Logf("gate, recorded digests + evidence manifest, one session, cold: %.2f requests/image", cold)
			if cold > 2 {
				t.Errorf("gate with the evidence manifest: %.2f requests/image cold, want at most 2", cold)
			}
			g.recheck(t, evs, g.opts(cache), true, true)
			if warm := g.perImage(t); warm != 0 {
				t.Errorf("gate warm: %.1f requests/image, want 0", warm)
			}
		})
	}
}

// BenchmarkGateRoundTrips times a gate over 50 images on a real registry
// and reports its registry requests per image (requests/image): candidacy
// (discovery, on the bundles as CI attached them) and a later gate
// (recorded digests, with and without the evidence manifest candidacy
// sealed, with and without one Session for the gate), cold (no cache) and
// warm (the cache of a previous run).
func BenchmarkGateRoundTrips(b *testing.B) {
	const n = 50
	for _, l := range layouts {
		g := newGate(b, n, l.referrers, l.bearer)
		var evs []*Evidence
		for _, c := range []struct {
			name string
			warm bool
			run  func(opts Options)
		}{
			{"verify=discover/cache=cold", false, func(o Options) { g.candidacy(b, o) }},
			{"verify=discover/cache=warm", true, func(o Options) { g.candidacy(b, o) }},
			{"seal", false, func(Options) {
				o := g.opts("")
				o.Seal = true
				evs = g.candidacy(b, o)
			}},
			{"verify=recorded/session=none/cache=cold", false, func(o Options) { g.recheck(b, evs, o, false, false) }},
			{"verify=recorded/cache=cold", false, func(o Options) { g.recheck(b, evs, o, true, false) }},
			{"verify=recorded+manifest/cache=cold", false, func(o Options) { g.recheck(b, evs, o, true, true) }},
			{"verify=recorded+manifest/cache=warm", true, func(o Options) { g.recheck(b, evs, o, true, true) }},
		} {
			if c.name == "seal" { // candidacy seals the evidence manifests the gates read
				c.run(Options{})
				g.counter.Reset()
				continue
			}
			b.Run(fmt.Sprintf("layout=%s/%s", l.name, c.name), func(b *testing.B) {
				warm := b.TempDir()
				if c.warm {
					c.run(g.opts(warm))
				}
				g.counter.Reset()
				for b.Loop() {
					dir := warm
					if !c.warm {
						dir = b.TempDir()
					}
					c.run(g.opts(dir))
				}
				b.ReportMetric(float64(g.counter.Total())/float64(b.N*n), "requests/image")
				g.counter.Reset()
			})
		}
	}
}

// TestEvidenceManifestDecidesNothing: the evidence manifest is only a
// transport. A gate given a manifest that embeds other bundles (a fresh
// scan where an old one is recorded), or whose descriptor claims a
// recorded digest for other bytes, still judges exactly the recorded
// bundles, fetched by digest.
func TestEvidenceManifestDecidesNothing(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, true)
	img := w.Image("checkout")
	e := w.CIEvidence(img)
	e.Scan = w.SignKey(w.Key, trusttest.Scan(img, w.Now.Add(-48*time.Hour), nil))
	w.Attach(img, e.All()...)
	ctx := context.Background()
	recorded := []string{trusttest.DigestOf(e.Sig), trusttest.DigestOf(e.Prov), trusttest.DigestOf(e.SBOM), trusttest.DigestOf(e.Scan)}
	fresh := w.SignKey(w.Key, trusttest.Scan(img, w.Now.Add(-time.Hour), nil))
	other, err := Attach(ctx, img.String(), EvidenceArtifactType, nil, [][]byte{e.Sig, e.Prov, e.SBOM, fresh}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A manifest whose scan layer claims the recorded scan's digest but
	// embeds the fresh scan.
	raw, err := artifact(EvidenceArtifactType, nil, nil, [][]byte{e.Sig, e.Prov, e.SBOM, fresh})
	if err != nil {
		t.Fatal(err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m.Layers[3].Digest, m.Layers[3].Size = v1.Hash{Algorithm: "sha256", Hex: strings.TrimPrefix(trusttest.DigestOf(e.Scan), "sha256:")}, int64(len(e.Scan))
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	lying := fmt.Sprintf("sha256:%x", sha256.Sum256(raw))
	if err := remote.Put(img.Context().Digest(lying), rawManifest(raw)); err != nil {
		t.Fatal(err)
	}
	prod := policyOf(w, "production", trusttest.KeyPolicy(productionAge))
	for _, manifest := range []string{other, lying, "sha256:" + strings.Repeat("0", 64)} {
		_, err := VerifyRecorded(ctx, prod, img.String(), recorded, Options{Now: w.Now, Manifest: manifest})
		wantRefusal(t, err, RuleScanTooOld, img, e.Scan)
	}
	if _, err := VerifyRecorded(ctx, prod, img.String(), recorded, Options{Now: w.Now, Manifest: "sha256:nothex"}); exitcode.Code(err) != exitcode.Invalid {
		t.Fatalf("a malformed manifest digest: exit %d: %v", exitcode.Code(err), err)
	}
}
