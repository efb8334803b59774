package trust

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

// TestSummaryRequirement is the attacker's table of the verificationSummary
// requirement: production requires a summary of an acceptance in staging
// signed with the notifier's key. The CI's evidence is recorded at
// candidacy (before any summary exists); the summary is found next to the
// image by VerifyRecorded as by Verify. A summary signed with another key
// (the CI's own, an attacker's), about another digest, of another
// environment, or FAILED is refused with its rule; none at all is missing.
// A forged summary beside a good one does not hide it.
func TestSummaryRequirement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// summaries are the bundles attached besides the CI's evidence.
		summaries func(w *trusttest.World, img, other name.Digest) [][]byte
		rule      string
		bad       int // index of the bundle the refusal names (-1: none)
	}{
		{"accepted in staging", func(w *trusttest.World, img, _ name.Digest) [][]byte {
			return [][]byte{w.SignKey(w.Notifier, trusttest.Summary(img, "staging", "PASSED"))}
		}, "", -1},
		{"a forged one beside it", func(w *trusttest.World, img, _ name.Digest) [][]byte {
			return [][]byte{w.SignKey(w.OtherKey, trusttest.Summary(img, "staging", "PASSED")),
				w.SignKey(w.Notifier, trusttest.Summary(img, "staging", "PASSED"))}
		}, "", -1},
		{"none", func(*trusttest.World, name.Digest, name.Digest) [][]byte { return nil }, RuleAttestationMissing, -1},
		{"signed by an attacker", func(w *trusttest.World, img, _ name.Digest) [][]byte {
			return [][]byte{w.SignKey(w.OtherKey, trusttest.Summary(img, "staging", "PASSED"))}
		}, RuleSignatureInvalid, 0},
		{"signed by the CI, not the notifier", func(w *trusttest.World, img, _ name.Digest) [][]byte {
			return [][]byte{w.SignKey(w.Key, trusttest.Summary(img, "staging", "PASSED"))}
		}, RuleSignatureInvalid, 0},
		{"about another digest", func(w *trusttest.World, _, other name.Digest) [][]byte {
			return [][]byte{w.SignKey(w.Notifier, trusttest.Summary(other, "staging", "PASSED"))}
		}, RuleAttestationSubject, 0},
		{"accepted in another environment", func(w *trusttest.World, img, _ name.Digest) [][]byte {
			return [][]byte{w.SignKey(w.Notifier, trusttest.Summary(img, "qa", "PASSED"))}
		}, RuleSummaryEnvironment, 0},
		{"an environment whose name extends staging", func(w *trusttest.World, img, _ name.Digest) [][]byte {
			return [][]byte{w.SignKey(w.Notifier, trusttest.Summary(img, "staging-eu", "PASSED"))}
		}, RuleSummaryEnvironment, 0},
		{"FAILED", func(w *trusttest.World, img, _ name.Digest) [][]byte {
			return [][]byte{w.SignKey(w.Notifier, trusttest.Summary(img, "staging", "FAILED"))}
		}, RuleSummaryResult, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := trusttest.New(t, true)
			img, other := w.Image("checkout"), w.Image("cart")
			ctx := context.Background()
			e := w.CIEvidence(img)
			w.Attach(img, e.All()...)
			staged, err := Verify(ctx, policyOf(w, "staging", trusttest.KeyPolicy(stagingAge)), img.String(),
				Options{SourceCommit: trusttest.SourceCommit, Now: w.Now})
			if err != nil {
				t.Fatalf("staging candidacy: %v", err)
			}
			sums := tc.summaries(w, img, other)
			w.Attach(img, sums...)
			prod := policyOf(w, "production", trusttest.SummaryPolicy(productionAge, "staging"))
			for _, verify := range []struct {
				how string
				run func() (*Evidence, error)
			}{
				{"recorded", func() (*Evidence, error) {
					return VerifyRecorded(ctx, prod, img.String(), staged.Digests(), Options{Now: w.Now})
				}},
				{"discovered", func() (*Evidence, error) { return Verify(ctx, prod, img.String(), Options{Now: w.Now}) }},
			} {
				ev, err := verify.run()
				if tc.rule == "" {
					if err != nil {
						t.Fatalf("%s: %v", verify.how, err)
					}
					if !hasKind(ev, KindVerificationSummary, "publicKey keys/throughline.pub") {
						t.Fatalf("%s: evidence %+v has no summary verified by the notifier's key", verify.how, ev.Items)
					}
					continue
				}
				var bad []byte
				if tc.bad >= 0 {
					bad = sums[tc.bad]
				}
				wantRefusal(t, err, tc.rule, img, bad)
			}
		})
	}
}

func hasKind(ev *Evidence, kind, signer string) bool {
	for _, it := range ev.Items {
		if it.Kind == kind && it.Signer == signer {
			return true
		}
	}
	return false
}

// TestSummaryNotRequired: a policy without the requirement ignores
// summaries, even forged ones; a summary never stands in for the CI's
// evidence.
func TestSummaryNotRequired(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, true)
	img := w.Image("checkout")
	ctx := context.Background()
	e := w.CIEvidence(img)
	w.Attach(img, append(e.All(), w.SignKey(w.OtherKey, trusttest.Summary(img, "staging", "PASSED")))...)
	if _, err := Verify(ctx, policyOf(w, "production", trusttest.KeyPolicy(productionAge)), img.String(), Options{Now: w.Now}); err != nil {
		t.Fatalf("a policy without the requirement: %v", err)
	}
	w2 := trusttest.New(t, true)
	img2 := w2.Image("checkout")
	w2.Attach(img2, w2.SignKey(w2.Notifier, trusttest.Summary(img2, "staging", "PASSED")))
	_, err := Verify(ctx, policyOf(w2, "production", trusttest.SummaryPolicy(productionAge, "staging")), img2.String(), Options{Now: w2.Now})
	var r *exitcode.Refusal
	if !errors.As(err, &r) || r.Rule != RuleSignatureMissing {
		t.Fatalf("a summary alone: %v, want %s", err, RuleSignatureMissing)
	}
}

// FuzzCheckSummary: a summary's statement comes from a registry; reading
// and checking it never panics, and one it accepts says exactly the
// environment's policy.uri and PASSED.
func FuzzCheckSummary(f *testing.F) {
	img := "sha256:" + strings.Repeat("a", 64)
	ref, err := name.NewDigest("registry.example/checkout@" + img)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(trusttest.Summary(ref, "staging", "PASSED"))
	f.Add(trusttest.Summary(ref, "staging-eu", "PASSED"))
	f.Add(trusttest.Summary(ref, "staging", "FAILED"))
	f.Add([]byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{"sha256":"aa"}}],` +
		`"predicateType":"https://slsa.dev/verification_summary/v1","predicate":{"policy":{"uri":7}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseStatement(data)
		if err != nil {
			return
		}
		if _, err := checkSummary(s, "staging"); err != nil {
			return
		}
		var p struct {
			Predicate struct {
				Policy struct {
					URI string `json:"uri"`
				} `json:"policy"`
				VerificationResult string `json:"verificationResult"`
			} `json:"predicate"`
		}
		raw, err := protojson.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		if p.Predicate.Policy.URI != SummaryPolicyURI("staging") || p.Predicate.VerificationResult != SummaryPassed {
			t.Fatalf("accepted a summary of %q, %q", p.Predicate.Policy.URI, p.Predicate.VerificationResult)
		}
	})
}

// TestSummaryReferrerWithoutBlob: a referrer pushed next to the image that
// lists a bundle the registry does not hold (anyone who can push to the
// image's repository can do that) does not block production's recorded
// re-verification: the summary beside it still counts, and without one the
// gate says the summary is missing, not that recorded evidence was lost.
func TestSummaryReferrerWithoutBlob(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, true)
	img := w.Image("checkout")
	ctx := context.Background()
	e := w.CIEvidence(img)
	w.Attach(img, e.All()...)
	staged, err := Verify(ctx, policyOf(w, "staging", trusttest.KeyPolicy(stagingAge)), img.String(),
		Options{SourceCommit: trusttest.SourceCommit, Now: w.Now})
	if err != nil {
		t.Fatalf("staging candidacy: %v", err)
	}
	// The referrer's manifest only: its bundle layer (and config) never uploaded.
	desc, err := remote.Head(img)
	if err != nil {
		t.Fatal(err)
	}
	ghost := w.SignKey(w.Notifier, trusttest.Summary(img, "staging", "PASSED"))
	art := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.MediaType(BundleMediaType))
	if art, err = mutate.AppendLayers(art, static.NewLayer(ghost, types.MediaType(BundleMediaType))); err != nil {
		t.Fatal(err)
	}
	art = mutate.Annotations(art, map[string]string{AnnotationPredicateType: PredicateVerificationSummary}).(v1.Image)
	art = mutate.Subject(art, *desc).(v1.Image)
	d, err := art.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(img.Context().Digest(d.String()), art); err != nil {
		t.Fatalf("pushing the manifest alone: %v", err)
	}
	prod := policyOf(w, "production", trusttest.SummaryPolicy(productionAge, "staging"))
	_, err = VerifyRecorded(ctx, prod, img.String(), staged.Digests(), Options{Now: w.Now})
	wantRefusal(t, err, RuleAttestationMissing, img, nil)

	w.Attach(img, w.SignKey(w.Notifier, trusttest.Summary(img, "staging", "PASSED")))
	ev, err := VerifyRecorded(ctx, prod, img.String(), staged.Digests(), Options{Now: w.Now})
	if err != nil || !hasKind(ev, KindVerificationSummary, "publicKey keys/throughline.pub") {
		t.Fatalf("a good summary beside the ghost referrer: %v", err)
	}
}

// TestPolicyHashCoversRules: the trust policy's hash (what a
// verification summary names as the policy the digest was judged by)
// moves with every rule and every file of the policy, not only with its
// signers: a summary judged under a 720h scan age must not claim the 24h
// policy.
func TestPolicyHashCoversRules(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, true)
	base := policyOf(w, "production", trusttest.SummaryPolicy(productionAge, "staging")).Hash()
	if again := policyOf(w, "production", trusttest.SummaryPolicy(productionAge, "staging")).Hash(); again != base {
		t.Fatalf("the same policy hashes to %s and %s", base, again)
	}
	for _, tc := range []struct {
		name string
		edit func(tp *v1alpha1.TrustPolicy)
	}{
		{"scan maxAge", func(tp *v1alpha1.TrustPolicy) { tp.Attestations.VulnerabilityScan.MaxAge.Duration *= 30 }},
		{"scan maxSeverity", func(tp *v1alpha1.TrustPolicy) { tp.Attestations.VulnerabilityScan.MaxSeverity = "critical" }},
		{"provenance builders", func(tp *v1alpha1.TrustPolicy) {
			tp.Attestations.Provenance.Builders = append(tp.Attestations.Provenance.Builders, "https://builder.example/any")
		}},
		{"sbom dropped", func(tp *v1alpha1.TrustPolicy) { tp.Attestations.SBOM = nil }},
		{"summary environment", func(tp *v1alpha1.TrustPolicy) { tp.Attestations.VerificationSummary.Environment = "qa" }},
	} {
		tp := trusttest.SummaryPolicy(productionAge, "staging")
		tc.edit(tp)
		if h := policyOf(w, "production", tp).Hash(); h == base {
			t.Errorf("%s changed, the policy hash did not (%s)", tc.name, h)
		}
	}
}

// TestSummaryKeylessRequirement is the attacker's table of a
// verificationSummary signed keyless: the notifier signs with a Fulcio
// certificate of its service account's identity, logged in a Rekor v2 and
// dated by a timestamp authority, all of the install's own Sigstore (a
// VirtualSigstore here). A certificate of another identity, of another
// issuer, of another Sigstore (the CI's public one, an attacker's), a
// bundle no timestamp authority dated (a Rekor v2 entry has no integrated
// time) and a key signature are refused; the good one counts, recorded or
// discovered.
func TestSummaryKeylessRequirement(t *testing.T) {
	t.Parallel()
	const id, iss = trusttest.NotifierIdentity, trusttest.NotifierIssuer
	for _, tc := range []struct {
		name    string
		summary func(w *trusttest.World, private *ca.VirtualSigstore, stmt []byte) []byte
		rule    string
	}{
		{"signed by the notifier's identity", func(w *trusttest.World, p *ca.VirtualSigstore, stmt []byte) []byte {
			return w.SignKeylessV2(p, id, iss, stmt, true)
		}, ""},
		{"another service account", func(w *trusttest.World, p *ca.VirtualSigstore, stmt []byte) []byte {
			return w.SignKeylessV2(p, "https://kubernetes.io/namespaces/apps/serviceaccounts/checkout", iss, stmt, true)
		}, RuleSignatureIdentity},
		{"the notifier's identity from another issuer", func(w *trusttest.World, p *ca.VirtualSigstore, stmt []byte) []byte {
			return w.SignKeylessV2(p, id, "https://oidc.attacker.example", stmt, true)
		}, RuleSignatureIdentity},
		{"no timestamp", func(w *trusttest.World, p *ca.VirtualSigstore, stmt []byte) []byte {
			return w.SignKeylessV2(p, id, iss, stmt, false)
		}, RuleSignatureInvalid},
		{"a certificate of another Sigstore", func(w *trusttest.World, _ *ca.VirtualSigstore, stmt []byte) []byte {
			return w.SignKeylessV2(w.Rogue, id, iss, stmt, true)
		}, RuleSignatureInvalid},
		{"the CI's keyless identity", func(w *trusttest.World, _ *ca.VirtualSigstore, stmt []byte) []byte {
			return w.SignKeyless(w.Sigstore, trusttest.CIIdentity, trusttest.CIIssuer, stmt)
		}, RuleSignatureInvalid},
		{"the notifier's old key", func(w *trusttest.World, _ *ca.VirtualSigstore, stmt []byte) []byte {
			return w.SignKey(w.Notifier, stmt)
		}, RuleSignatureInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := trusttest.New(t, true)
			private, err := ca.NewVirtualSigstore()
			if err != nil {
				t.Fatal(err)
			}
			w.Files[trusttest.NotifierTrustedRoot] = trusttest.TrustedRootJSON(t, private)
			img := w.Image("checkout")
			ctx := context.Background()
			w.Attach(img, w.CIEvidence(img).All()...)
			staged, err := Verify(ctx, policyOf(w, "staging", trusttest.KeyPolicy(stagingAge)), img.String(),
				Options{SourceCommit: trusttest.SourceCommit, Now: w.Now})
			if err != nil {
				t.Fatalf("staging candidacy: %v", err)
			}
			sum := tc.summary(w, private, trusttest.Summary(img, "staging", "PASSED"))
			w.Attach(img, sum)
			prod := policyOf(w, "production", trusttest.SummaryKeylessPolicy(productionAge, "staging"))
			for _, verify := range []struct {
				how string
				run func() (*Evidence, error)
			}{
				{"recorded", func() (*Evidence, error) {
					return VerifyRecorded(ctx, prod, img.String(), staged.Digests(), Options{Now: w.Now})
				}},
				{"discovered", func() (*Evidence, error) { return Verify(ctx, prod, img.String(), Options{Now: w.Now}) }},
			} {
				ev, err := verify.run()
				if tc.rule == "" {
					if err != nil {
						t.Fatalf("%s: %v", verify.how, err)
					}
					if !hasKind(ev, KindVerificationSummary, "keyless "+id+" ("+iss+")") {
						t.Fatalf("%s: evidence %+v has no summary verified as the notifier's identity", verify.how, ev.Items)
					}
					continue
				}
				wantRefusal(t, err, tc.rule, img, sum)
			}
		})
	}
}

// TestSummaryKeylessPolicyHash: the keyless identity the summary must be
// signed by is part of the policy's hash (its trusted root is a file, and
// hashed as one).
func TestSummaryKeylessPolicyHash(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, true)
	private, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	w.Files[trusttest.NotifierTrustedRoot] = trusttest.TrustedRootJSON(t, private)
	a := policyOf(w, "production", trusttest.SummaryKeylessPolicy(productionAge, "staging"))
	tp := trusttest.SummaryKeylessPolicy(productionAge, "staging")
	tp.Attestations.VerificationSummary.Keyless.Identity = "https://kubernetes.io/namespaces/apps/serviceaccounts/checkout"
	b := policyOf(w, "production", tp)
	if a.Hash() == b.Hash() {
		t.Fatal("two keyless identities, one policy hash")
	}
	if got := (&v1alpha1.TrustPolicy{Attestations: tp.Attestations}).Files(); !slices.Contains(got, trusttest.NotifierTrustedRoot) {
		t.Fatalf("Files() = %v, want the summary's trusted root", got)
	}
}
