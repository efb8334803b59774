package trust

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/throughline-dev/throughline/trust/trusttest"
)

// FuzzEmbedded: whatever manifest a registry returns, a bundle taken from
// a descriptor's data field is one whose content hashes to the digest it
// is kept under.
func FuzzEmbedded(f *testing.F) {
	good, err := artifact(EvidenceArtifactType, nil, nil, [][]byte{[]byte(`{"a":1}`), []byte("b")})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(bytes.Replace(good, []byte(`"data":"`), []byte(`"data":"AA`), 1))
	f.Add([]byte(`{"layers":[{"mediaType":"` + BundleMediaType + `","digest":"sha256:` +
		fmt.Sprintf("%x", sha256.Sum256([]byte("x"))) + `","size":1,"data":"eQ=="}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := v1.ParseManifest(bytes.NewReader(data))
		if err != nil {
			return
		}
		held := map[v1.Hash][]byte{}
		embedded(m, held)
		for h, b := range held {
			if h.Algorithm != "sha256" || fmt.Sprintf("%x", sha256.Sum256(b)) != h.Hex {
				t.Fatalf("kept %d bytes under %s", len(b), h)
			}
		}
	})
}

// TestSealed: the evidence manifest of a sealed verification lists
// exactly the verified bundles, in order; read once from the registry,
// then from the cache without a request. A manifest the registry lost is
// not found; a manifest that is not an evidence manifest of the image (a
// bundle referrer, another image's evidence manifest) is
// ErrNotEvidenceManifest.
func TestSealed(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, true)
	img := w.Image("checkout")
	e := w.CIEvidence(img)
	w.Attach(img, e.All()...)
	ctx := context.Background()
	opts := Options{CacheDir: t.TempDir(), Now: w.Now, SourceCommit: trusttest.SourceCommit, Seal: true}
	ev, err := Verify(ctx, policyOf(w, "staging", trusttest.KeyPolicy(stagingAge)), img.String(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, warm := range []bool{false, true} {
		before := w.Requests.Load()
		got, found, err := Sealed(ctx, img.String(), ev.Manifest, opts)
		if err != nil || !found || !slices.Equal(got, ev.Digests()) {
			t.Fatalf("sealed %q (found %v, %v), want %q", got, found, err, ev.Digests())
		}
		if n := w.Requests.Load() - before; warm && n != 0 {
			t.Fatalf("a warm read of the evidence manifest made %d registry requests, want 0", n)
		}
	}
	if _, found, err := Sealed(ctx, img.String(), "sha256:"+strings.Repeat("0", 64), Options{}); found || err != nil {
		t.Fatalf("a lost manifest: found %v, %v", found, err)
	}
	// Another image of the repository's evidence manifest, and a bundle
	// referrer of this image: neither seals this image's evidence.
	next := w.Image("checkout")
	nextManifest, err := Attach(ctx, next.String(), EvidenceArtifactType, nil, [][]byte{e.Sig}, nil)
	if err != nil {
		t.Fatal(err)
	}
	referrer, err := Attach(ctx, img.String(), BundleMediaType, nil, [][]byte{e.Scan}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]string{"another image's evidence manifest": nextManifest, "a bundle referrer": referrer} {
		if _, found, err := Sealed(ctx, img.String(), d, Options{}); !found || !errors.Is(err, ErrNotEvidenceManifest) {
			t.Fatalf("%s: found %v, %v, want %v", name, found, err, ErrNotEvidenceManifest)
		}
	}
}
