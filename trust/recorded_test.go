package trust

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/promotion/policyfile"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

// TestVerifyRecordedUsesTheRecordedEvidence: staging accepts an image
// whose scan is two days old; CI then attaches a fresh scan. Production
// re-verifies the evidence recorded at candidacy and refuses its old scan,
// though a fresh one now sits next to the image: never a newer one found
// by tag. Verify (discovery) would take the fresh one.
func TestVerifyRecordedUsesTheRecordedEvidence(t *testing.T) {
	t.Parallel()
	for _, referrers := range []bool{true, false} {
		w := trusttest.New(t, referrers)
		img := w.Image("checkout")
		e := w.CIEvidence(img)
		old := w.SignKey(w.Key, trusttest.Scan(img, w.Now.Add(-48*time.Hour), nil))
		e.Scan = old
		w.Attach(img, e.All()...)
		ctx := context.Background()
		staged, err := Verify(ctx, policyOf(w, "staging", trusttest.KeyPolicy(stagingAge)), img.String(), Options{SourceCommit: trusttest.SourceCommit, Now: w.Now})
		if err != nil {
			t.Fatalf("staging: %v", err)
		}
		if !slices.Contains(staged.Digests(), trusttest.DigestOf(old)) || staged.SourceCommit != trusttest.SourceCommit {
			t.Fatalf("staging evidence %+v: want the old scan %s and commit %s", staged, trusttest.DigestOf(old), trusttest.SourceCommit)
		}
		fresh := w.SignKey(w.Key, trusttest.Scan(img, w.Now.Add(-time.Hour), nil))
		e.Scan = fresh
		w.Attach(img, e.All()...) // the tag scheme: the .att tag now holds the fresh scan, not the old one
		prod := policyOf(w, "production", trusttest.KeyPolicy(productionAge))
		_, err = VerifyRecorded(ctx, prod, img.String(), staged.Digests(), Options{Now: w.Now})
		wantRefusal(t, err, RuleScanTooOld, img, old)
		now, err := Verify(ctx, prod, img.String(), Options{Now: w.Now})
		if err != nil || !slices.Contains(now.Digests(), trusttest.DigestOf(fresh)) {
			t.Fatalf("production discovery: %v, %+v: want the fresh scan", err, now)
		}
	}
}

// TestVerifyRecordedRefusals: recorded evidence the registry lost, and
// recorded digests that do not cover the target's requirements.
func TestVerifyRecordedRefusals(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, true)
	img := w.Image("checkout")
	e := w.CIEvidence(img)
	w.Attach(img, e.All()...)
	ctx := context.Background()
	pol := policyOf(w, "production", trusttest.KeyPolicy(productionAge))
	lost := "sha256:" + strings.Repeat("0", 64)
	_, err := VerifyRecorded(ctx, pol, img.String(), []string{trusttest.DigestOf(e.Sig), lost}, Options{})
	var r *exitcode.Refusal
	if !errors.As(err, &r) || r.Rule != RuleEvidenceMissing || r.Field != "evidence "+lost {
		t.Fatalf("lost evidence: %v", err)
	}
	_, err = VerifyRecorded(ctx, pol, img.String(), []string{trusttest.DigestOf(e.Prov), trusttest.DigestOf(e.SBOM), trusttest.DigestOf(e.Scan)}, Options{})
	wantRefusal(t, err, RuleSignatureMissing, img, nil)
	// Another image's evidence, recorded for this one: refused by subject.
	other := w.Image("other")
	oe := w.CIEvidence(other)
	w.Attach(other, oe.All()...)
	_, err = VerifyRecorded(ctx, pol, other.String(), []string{trusttest.DigestOf(oe.Sig), trusttest.DigestOf(e.Prov), trusttest.DigestOf(oe.SBOM), trusttest.DigestOf(oe.Scan)},
		Options{})
	if !errors.As(err, &r) || r.Rule != RuleEvidenceMissing && r.Rule != RuleAttestationSubject {
		t.Fatalf("another image's provenance: %v", err)
	}
	if _, err := VerifyRecorded(ctx, pol, img.String(), []string{"sha256:nothex"}, Options{}); exitcode.Code(err) != exitcode.Invalid {
		t.Fatalf("bad recorded digest: exit %d: %v", exitcode.Code(err), err)
	}
	if _, err := Verify(ctx, pol, w.Host+"/checkout:latest", Options{}); exitcode.Code(err) != exitcode.Invalid {
		t.Fatalf("tag reference: exit %d: %v", exitcode.Code(err), err)
	}
}

// TestCacheMakesNoRequest: after a cold verification, re-verifying the
// recorded evidence (same signers, another environment's predicate rules)
// makes no registry request, yet judges the scan's age at the new time.
func TestCacheMakesNoRequest(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, true)
	img := w.Image("checkout")
	e := w.CIEvidence(img)
	w.Attach(img, e.All()...)
	ctx := context.Background()
	opts := Options{CacheDir: t.TempDir(), Now: w.Now, SourceCommit: trusttest.SourceCommit}
	before := w.Requests.Load()
	ev, err := Verify(ctx, policyOf(w, "staging", trusttest.KeyPolicy(stagingAge)), img.String(), opts)
	if err != nil {
		t.Fatal(err)
	}
	cold := w.Requests.Load() - before
	t.Logf("cold: %d requests for %d bundles", cold, len(ev.Items))

	before = w.Requests.Load()
	if _, err := VerifyRecorded(ctx, policyOf(w, "staging", trusttest.KeyPolicy(stagingAge)), img.String(), ev.Digests(),
		Options{Now: w.Now}); err != nil {
		t.Fatal(err)
	}
	if n := w.Requests.Load() - before; n > int64(len(ev.Items))+1 {
		t.Errorf("cold re-verification made %d registry requests for %d bundles, want at most one each and a handshake", n, len(ev.Items))
	}

	before = w.Requests.Load()
	prod := policyOf(w, "production", trusttest.KeyPolicy(productionAge))
	if _, err := VerifyRecorded(ctx, prod, img.String(), ev.Digests(), opts); err != nil {
		t.Fatal(err)
	}
	if n := w.Requests.Load() - before; n != 0 {
		t.Fatalf("warm re-verification made %d registry requests, want 0", n)
	}
	later := opts
	later.Now = w.Now.Add(2 * productionAge)
	_, err = VerifyRecorded(ctx, prod, img.String(), ev.Digests(), later)
	wantRefusal(t, err, RuleScanTooOld, img, e.Scan)
	if n := w.Requests.Load() - before; n != 0 {
		t.Fatalf("warm re-verification made %d registry requests, want 0", n)
	}

	// Another signer set: the cached bundles are verified again, with its
	// key, and refused (still without a request).
	w.Files["keys/other.pub"] = mustPEM(t, w)
	tp := trusttest.KeyPolicy(productionAge)
	tp.Signatures[0].PublicKey = "keys/other.pub"
	_, err = VerifyRecorded(ctx, policyOf(w, "production", tp), img.String(), ev.Digests(), opts)
	wantRefusal(t, err, RuleSignatureInvalid, img, nil)
	if n := w.Requests.Load() - before; n != 0 {
		t.Fatalf("warm re-verification made %d registry requests, want 0", n)
	}
}

func mustPEM(t testing.TB, w *trusttest.World) []byte {
	pem, err := w.OtherKey.GetPublicKeyPem()
	if err != nil {
		t.Fatal(err)
	}
	return []byte(pem)
}

// TestCompileRefusesBadFiles: a key or trusted root the repository does
// not have, or that is not what it claims, is invalid input naming it.
func TestCompileRefusesBadFiles(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, false)
	w.Files["keys/garbage.pub"] = []byte("not a key")
	w.Files["sigstore/garbage.json"] = []byte("{}")
	// The field (environments.staging.trust.signatures[0]) is in the
	// message only: testdata/compile-bad-files.golden.
	msgs := golden.ErrorLines(t, "testdata/compile-bad-files.golden", 4)
	for _, c := range []struct{ file, key, root string }{
		{"keys/missing.pub", "keys/missing.pub", ""},
		{"keys/garbage.pub", "keys/garbage.pub", ""},
		{"sigstore/missing.json", "", "sigstore/missing.json"},
		{"sigstore/garbage.json", "", "sigstore/garbage.json"},
	} {
		tp := trusttest.KeylessPolicy(stagingAge)
		if c.key != "" {
			tp = trusttest.KeyPolicy(stagingAge)
			tp.Signatures[0].PublicKey = c.key
		} else {
			tp.Signatures[0].Keyless.TrustedRoot = c.root
		}
		_, err := Compile(context.Background(), "staging", tp, w.Read)
		var in *exitcode.InvalidInput
		if !errors.As(err, &in) || exitcode.Code(err) != exitcode.Invalid || in.File != c.file {
			t.Errorf("%s: exit %d: %v", c.file, exitcode.Code(err), err)
			continue
		}
		msgs(c.file, err)
	}
}

// TestExamplePolicyCompiles: the example repository's trust policies
// parse and their files load.
func TestExamplePolicyCompiles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "examples", "gitops-env")
	data, err := os.ReadFile(filepath.Join(dir, policyfile.File))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policyfile.Parse(policyfile.File, data)
	if err != nil {
		t.Fatal(err)
	}
	read := func(_ context.Context, p string) ([]byte, error) {
		return os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
	}
	for _, env := range []string{"staging", "production"} {
		tp := pol.Environments[env].Trust
		if tp == nil {
			t.Fatalf("%s: no trust policy", env)
		}
		p, err := Compile(context.Background(), env, tp, read)
		if err != nil || !p.Requires() {
			t.Fatalf("%s: %v", env, err)
		}
	}
	s, p := pol.Environments["staging"].Trust, pol.Environments["production"].Trust
	if p.Attestations.VulnerabilityScan.MaxAge.Duration >= s.Attestations.VulnerabilityScan.MaxAge.Duration {
		t.Error("production's scan max age is not shorter than staging's")
	}
}

// TestDiscoveryLayouts: the bundles are found wherever cosign and
// registries put them: the signature under .sig and the attestations under
// .att; referrers on a registry without the referrers API (the referrers
// tag sha256-<hex>); some as referrers, some under cosign's tags.
func TestDiscoveryLayouts(t *testing.T) {
	t.Parallel()
	for name, layout := range map[string]func(w *trusttest.World, img name.Digest, e *trusttest.Evidence){
		"sig and att tags": func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) {
			w.AttachTag(img, ".sig", e.Sig)
			w.AttachTag(img, ".att", e.Prov, e.SBOM, e.Scan)
		},
		"referrers tag without the API": func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) {
			w.AttachReferrers(img, e.All()...)
		},
		"referrers and tags": func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) {
			w.AttachTag(img, ".sig", e.Sig)
			w.AttachReferrers(img, e.Prov, e.SBOM, e.Scan)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := trusttest.New(t, false)
			img := w.Image("checkout")
			e := w.CIEvidence(img)
			layout(w, img, e)
			ev, err := Verify(context.Background(), policyOf(w, "staging", trusttest.KeyPolicy(stagingAge)), img.String(), Options{Now: w.Now})
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range e.All() {
				if !slices.Contains(ev.Digests(), trusttest.DigestOf(b)) {
					t.Errorf("evidence %v lacks %s", ev.Digests(), trusttest.DigestOf(b))
				}
			}
		})
	}
}
