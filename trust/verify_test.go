package trust

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

const (
	stagingAge    = 7 * 24 * time.Hour
	productionAge = 24 * time.Hour
)

// tamper replaces the DSSE payload of bundle b by payload, keeping its
// signature.
func tamper(t testing.TB, b, payload []byte) []byte {
	t.Helper()
	var pb protobundle.Bundle
	if err := protojson.Unmarshal(b, &pb); err != nil {
		t.Fatal(err)
	}
	pb.GetDsseEnvelope().Payload = payload
	out, err := protojson.Marshal(&pb)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wantRefusal checks that err is a refusal of rule naming the image and,
// when evidence is set, that evidence digest.
func wantRefusal(t *testing.T, err error, rule string, img name.Digest, evidence []byte) {
	t.Helper()
	var r *exitcode.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("want refusal %s, got %v", rule, err)
	}
	if r.Rule != rule || exitcode.Code(err) != exitcode.Refused {
		t.Fatalf("rule %s (exit %d), want %s: %v", r.Rule, exitcode.Code(err), rule, err)
	}
	// The message is "<image>: evidence <digest>: <rule>: <why>"
	// (exitcode.Refusal's Error over these fields).
	if r.Reason != rule {
		t.Errorf("refusal %q does not name its rule %s", err, rule)
	}
	if r.Object != img.String() {
		t.Errorf("refusal %q names object %q, not the image %s", err, r.Object, img)
	}
	if evidence != nil && r.Field != "evidence "+trusttest.DigestOf(evidence) {
		t.Errorf("refusal %q names %q, not the evidence %s", err, r.Field, trusttest.DigestOf(evidence))
	}
}

// TestVerifyRefusesAttacks is the attacker's table: each case edits a
// complete CI evidence set the way a careless or hostile contributor
// would, and names the refusal, for a registry with the referrers API and
// one with only cosign's tags.
func TestVerifyRefusesAttacks(t *testing.T) {
	t.Parallel()
	type cas struct {
		name   string
		edit   func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte // the evidence the refusal names (nil: none)
		policy func() *v1alpha1.TrustPolicy
		commit string
		rule   string // "": accepted
	}
	staging := func() *v1alpha1.TrustPolicy { return trusttest.KeyPolicy(stagingAge) }
	production := func() *v1alpha1.TrustPolicy { return trusttest.KeyPolicy(productionAge) }
	keyless := func() *v1alpha1.TrustPolicy { return trusttest.KeylessPolicy(stagingAge) }
	other, _ := name.NewDigest("example.com/other@sha256:" + strings.Repeat("ab", 32))
	cases := []cas{
		{"complete evidence", func(*trusttest.World, name.Digest, *trusttest.Evidence) []byte { return nil }, staging, trusttest.SourceCommit, ""},
		{"no signature", func(_ *trusttest.World, _ name.Digest, e *trusttest.Evidence) []byte { e.Sig = nil; return nil },
			staging, "", RuleSignatureMissing},
		{"tampered signature", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			e.Sig = tamper(w.T, e.Sig, trusttest.Statement(trusttest.Hex(img), PredicateSignature, map[string]any{"forged": true}))
			return e.Sig
		}, staging, "", RuleSignatureInvalid},
		{"signature by another key", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			e.Sig = w.SignKey(w.OtherKey, trusttest.Signature(img))
			return e.Sig
		}, staging, "", RuleSignatureInvalid},
		{"signature of another image", func(w *trusttest.World, _ name.Digest, e *trusttest.Evidence) []byte {
			e.Sig = w.SignKey(w.Key, trusttest.Signature(other))
			return e.Sig
		}, staging, "", RuleAttestationSubject},
		{"swapped attestation", func(w *trusttest.World, _ name.Digest, e *trusttest.Evidence) []byte {
			e.Prov = w.SignKey(w.Key, trusttest.Provenance(other, trusttest.BuilderID, trusttest.SourceRepo, trusttest.SourceCommit))
			return e.Prov
		}, staging, "", RuleAttestationSubject},
		{"attestation by another key", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			e.Prov = w.SignKey(w.OtherKey, trusttest.Provenance(img, trusttest.BuilderID, trusttest.SourceRepo, trusttest.SourceCommit))
			return e.Prov
		}, staging, "", RuleSignatureInvalid},
		{"provenance from another commit", func(*trusttest.World, name.Digest, *trusttest.Evidence) []byte { return nil },
			staging, strings.Repeat("f", 40), RuleProvenanceSource},
		{"provenance from another repository", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			e.Prov = w.SignKey(w.Key, trusttest.Provenance(img, trusttest.BuilderID, "https://github.com/attacker/checkout", trusttest.SourceCommit))
			return e.Prov
		}, staging, "", RuleProvenanceSource},
		{"provenance from a look-alike repository", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			e.Prov = w.SignKey(w.Key, trusttest.Provenance(img, trusttest.BuilderID, trusttest.SourceRepo+"-fork", trusttest.SourceCommit))
			return e.Prov
		}, staging, "", RuleProvenanceSource},
		{"provenance by another builder", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			e.Prov = w.SignKey(w.Key, trusttest.Provenance(img, "https://attacker.example/builder", trusttest.SourceRepo, trusttest.SourceCommit))
			return e.Prov
		}, staging, trusttest.SourceCommit, RuleProvenanceBuilder},
		{"no provenance", func(_ *trusttest.World, _ name.Digest, e *trusttest.Evidence) []byte { e.Prov = nil; return nil },
			staging, "", RuleAttestationMissing},
		{"no SBOM", func(_ *trusttest.World, _ name.Digest, e *trusttest.Evidence) []byte { e.SBOM = nil; return nil },
			staging, "", RuleAttestationMissing},
		{"SPDX SBOM accepted", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			e.SBOM = w.SignKey(w.Key, trusttest.SBOM(img, PredicateSPDX))
			return nil
		}, staging, "", ""},
		{"SPDX SBOM where only CycloneDX is", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			e.SBOM = w.SignKey(w.Key, trusttest.SBOM(img, PredicateSPDX))
			return e.SBOM
		}, func() *v1alpha1.TrustPolicy {
			tp := staging()
			tp.Attestations.SBOM.Formats = []string{"cyclonedx"}
			return tp
		}, "", RuleSBOMFormat},
		{"scan two days old: fine for staging", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			e.Scan = w.SignKey(w.Key, trusttest.Scan(img, w.Now.Add(-48*time.Hour), nil))
			return nil
		}, staging, "", ""},
		{"scan two days old: too old for production", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			e.Scan = w.SignKey(w.Key, trusttest.Scan(img, w.Now.Add(-48*time.Hour), nil))
			return e.Scan
		}, production, "", RuleScanTooOld},
		{"scan dated in the future", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			e.Scan = w.SignKey(w.Key, trusttest.Scan(img, w.Now.Add(48*time.Hour), nil))
			return e.Scan
		}, production, "", RuleScanTooOld},
		{"critical finding", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			e.Scan = w.SignKey(w.Key, trusttest.Scan(img, w.Now, map[string]string{"CVE-2026-0002": "CRITICAL"}))
			return e.Scan
		}, staging, "", RuleScanFindings},
		{"CVSS score above the threshold", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			e.Scan = w.SignKey(w.Key, trusttest.Scan(img, w.Now, map[string]string{"CVE-2026-0003": "7.5"}))
			return e.Scan
		}, staging, "", RuleScanFindings},
		{"unreadable severity counts as critical", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			e.Scan = w.SignKey(w.Key, trusttest.Scan(img, w.Now, map[string]string{"CVE-2026-0004": "whatever"}))
			return e.Scan
		}, staging, "", RuleScanFindings},
		{"no scan", func(_ *trusttest.World, _ name.Digest, e *trusttest.Evidence) []byte { e.Scan = nil; return nil },
			staging, "", RuleAttestationMissing},
		{"keyless signature and attestations", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			*e = *w.KeylessEvidence(img, trusttest.CIIdentity, trusttest.CIIssuer)
			return nil
		}, keyless, trusttest.SourceCommit, ""},
		{"keyless: another identity", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			*e = *w.KeylessEvidence(img, "https://github.com/attacker/checkout/.github/workflows/release.yaml@refs/heads/main", trusttest.CIIssuer)
			return e.Sig
		}, keyless, "", RuleSignatureIdentity},
		{"keyless: another issuer", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			*e = *w.KeylessEvidence(img, trusttest.CIIdentity, "https://accounts.attacker.example")
			return e.Sig
		}, keyless, "", RuleSignatureIdentity},
		{"keyless: certificate of another root", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			*e = *w.KeylessEvidence(img, trusttest.CIIdentity, trusttest.CIIssuer)
			e.Sig = w.SignKeyless(w.Rogue, trusttest.CIIdentity, trusttest.CIIssuer, trusttest.Signature(img))
			return e.Sig
		}, keyless, "", RuleSignatureInvalid},
		{"keyless: a key signature where the policy wants an identity", func(*trusttest.World, name.Digest, *trusttest.Evidence) []byte { return nil },
			keyless, "", RuleSignatureInvalid},
		{"keyless: identity regexp", func(w *trusttest.World, img name.Digest, e *trusttest.Evidence) []byte {
			*e = *w.KeylessEvidence(img, trusttest.CIIdentity, trusttest.CIIssuer)
			return nil
		}, func() *v1alpha1.TrustPolicy {
			tp := keyless()
			k := tp.Signatures[0].Keyless
			k.Identity, k.IdentityRegexp = "", `^https://github\.com/example/checkout/\.github/workflows/release\.yaml@refs/heads/(main|release-[0-9]+)$`
			return tp
		}, "", ""},
	}
	for _, mode := range []struct {
		name      string
		referrers bool
	}{{"referrers", true}, {"cosign tags", false}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					w := trusttest.New(t, mode.referrers)
					img := w.Image("checkout")
					e := w.CIEvidence(img)
					named := c.edit(w, img, e)
					w.Attach(img, e.All()...)
					ev, err := Verify(context.Background(), policyOf(w, "staging", c.policy()), img.String(),
						Options{SourceCommit: c.commit, Now: w.Now})
					if c.rule == "" {
						if err != nil {
							t.Fatalf("refused: %v", err)
						}
						if len(ev.Items) != 4 {
							t.Fatalf("evidence %+v: want 4 items", ev)
						}
						return
					}
					wantRefusal(t, err, c.rule, img, named)
				})
			}
		})
	}
}

// TestUnanchoredIdentityRegexp: a keyless policy whose identity regexp
// is not anchored at both ends would accept the certificate of an
// attacker's workflow whose URI embeds the trusted one; Compile refuses
// the policy (invalid input), so no evidence is judged with it.
func TestUnanchoredIdentityRegexp(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, true)
	img := w.Image("checkout")
	attacker := "https://github.com/attacker/x/?" + trusttest.CIIdentity
	w.Attach(img, w.KeylessEvidence(img, attacker, trusttest.CIIssuer).All()...)
	tp := trusttest.KeylessPolicy(stagingAge)
	k := tp.Signatures[0].Keyless
	k.Identity, k.IdentityRegexp = "", `https://github\.com/example/checkout/\.github/workflows/release\.yaml@refs/heads/main`
	p, err := Compile(context.Background(), "staging", tp, w.Read)
	if err == nil {
		_, err = Verify(context.Background(), p, img.String(), Options{Now: w.Now})
		t.Fatalf("an unanchored identityRegexp compiled; the attacker's evidence: %v", err)
	}
	if !errors.Is(err, environment.ErrUnanchoredRegexp) || exitcode.Code(err) != exitcode.Invalid {
		t.Fatalf("exit %d: %v", exitcode.Code(err), err)
	}
}
