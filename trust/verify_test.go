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
	"github.com/throughline-dev/throughline/exitcode"
)

const (
	stagingAge    = 7 * 24 * time.Hour
	productionAge = 24 * time.Hour
)

// evidence is a CI run's bundles for one image, each replaceable by a case.
type evidence struct {
	sig, prov, sbom, scan []byte
}

func (w *world) ciEvidence(img name.Digest) *evidence {
	return &evidence{
		sig:  w.signKey(w.key, signatureOf(img)),
		prov: w.signKey(w.key, provenance(img, builderID, sourceRepo, sourceCommit)),
		sbom: w.signKey(w.key, sbom(img, PredicateCycloneDX+"/v1.5")),
		scan: w.signKey(w.key, scan(img, w.now.Add(-2*time.Hour), map[string]string{"CVE-2026-0001": "medium"})),
	}
}

func (e *evidence) all() [][]byte {
	var out [][]byte
	for _, b := range [][]byte{e.sig, e.prov, e.sbom, e.scan} {
		if b != nil {
			out = append(out, b)
		}
	}
	return out
}

// tamper replaces the DSSE payload of bundle b by payload, keeping its
// signature.
func tamper(t *testing.T, b, payload []byte) []byte {
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
	if !strings.Contains(err.Error(), img.String()) {
		t.Errorf("refusal %q does not name the image %s", err, img)
	}
	if evidence != nil && !strings.Contains(err.Error(), digestOf(evidence)) {
		t.Errorf("refusal %q does not name the evidence %s", err, digestOf(evidence))
	}
}

// TestVerifyRefusesAttacks is the attacker's table: each case edits a
// complete CI evidence set the way a careless or hostile contributor
// would, and names the refusal, for a registry with the referrers API and
// one with only cosign's tags.
func TestVerifyRefusesAttacks(t *testing.T) {
	type cas struct {
		name   string
		edit   func(w *world, img name.Digest, e *evidence) []byte // the evidence the refusal names (nil: none)
		policy func() *v1alpha1.TrustPolicy
		commit string
		rule   string // "": accepted
	}
	staging := func() *v1alpha1.TrustPolicy { return keyPolicy(stagingAge) }
	production := func() *v1alpha1.TrustPolicy { return keyPolicy(productionAge) }
	keyless := func() *v1alpha1.TrustPolicy { return keylessPolicy(stagingAge) }
	other, _ := name.NewDigest("example.com/other@sha256:" + strings.Repeat("ab", 32))
	cases := []cas{
		{"complete evidence", func(*world, name.Digest, *evidence) []byte { return nil }, staging, sourceCommit, ""},
		{"no signature", func(_ *world, _ name.Digest, e *evidence) []byte { e.sig = nil; return nil },
			staging, "", RuleSignatureMissing},
		{"tampered signature", func(w *world, img name.Digest, e *evidence) []byte {
			e.sig = tamper(w.t, e.sig, statement(hexOf(img), PredicateSignature, map[string]any{"forged": true}))
			return e.sig
		}, staging, "", RuleSignatureInvalid},
		{"signature by another key", func(w *world, img name.Digest, e *evidence) []byte {
			e.sig = w.signKey(w.otherKey, signatureOf(img))
			return e.sig
		}, staging, "", RuleSignatureInvalid},
		{"signature of another image", func(w *world, _ name.Digest, e *evidence) []byte {
			e.sig = w.signKey(w.key, signatureOf(other))
			return e.sig
		}, staging, "", RuleAttestationSubject},
		{"swapped attestation", func(w *world, _ name.Digest, e *evidence) []byte {
			e.prov = w.signKey(w.key, provenance(other, builderID, sourceRepo, sourceCommit))
			return e.prov
		}, staging, "", RuleAttestationSubject},
		{"attestation by another key", func(w *world, img name.Digest, e *evidence) []byte {
			e.prov = w.signKey(w.otherKey, provenance(img, builderID, sourceRepo, sourceCommit))
			return e.prov
		}, staging, "", RuleSignatureInvalid},
		{"provenance from another commit", func(*world, name.Digest, *evidence) []byte { return nil },
			staging, strings.Repeat("f", 40), RuleProvenanceSource},
		{"provenance from another repository", func(w *world, img name.Digest, e *evidence) []byte {
			e.prov = w.signKey(w.key, provenance(img, builderID, "https://github.com/attacker/checkout", sourceCommit))
			return e.prov
		}, staging, "", RuleProvenanceSource},
		{"provenance from a look-alike repository", func(w *world, img name.Digest, e *evidence) []byte {
			e.prov = w.signKey(w.key, provenance(img, builderID, sourceRepo+"-fork", sourceCommit))
			return e.prov
		}, staging, "", RuleProvenanceSource},
		{"provenance by another builder", func(w *world, img name.Digest, e *evidence) []byte {
			e.prov = w.signKey(w.key, provenance(img, "https://attacker.example/builder", sourceRepo, sourceCommit))
			return e.prov
		}, staging, sourceCommit, RuleProvenanceBuilder},
		{"no provenance", func(_ *world, _ name.Digest, e *evidence) []byte { e.prov = nil; return nil },
			staging, "", RuleAttestationMissing},
		{"no SBOM", func(_ *world, _ name.Digest, e *evidence) []byte { e.sbom = nil; return nil },
			staging, "", RuleAttestationMissing},
		{"SPDX SBOM accepted", func(w *world, img name.Digest, e *evidence) []byte {
			e.sbom = w.signKey(w.key, sbom(img, PredicateSPDX))
			return nil
		}, staging, "", ""},
		{"SPDX SBOM where only CycloneDX is", func(w *world, img name.Digest, e *evidence) []byte {
			e.sbom = w.signKey(w.key, sbom(img, PredicateSPDX))
			return e.sbom
		}, func() *v1alpha1.TrustPolicy {
			tp := staging()
			tp.Attestations.SBOM.Formats = []string{"cyclonedx"}
			return tp
		}, "", RuleSBOMFormat},
		{"scan two days old: fine for staging", func(w *world, img name.Digest, e *evidence) []byte {
			e.scan = w.signKey(w.key, scan(img, w.now.Add(-48*time.Hour), nil))
			return nil
		}, staging, "", ""},
		{"scan two days old: too old for production", func(w *world, img name.Digest, e *evidence) []byte {
			e.scan = w.signKey(w.key, scan(img, w.now.Add(-48*time.Hour), nil))
			return e.scan
		}, production, "", RuleScanTooOld},
		{"scan dated in the future", func(w *world, img name.Digest, e *evidence) []byte {
			e.scan = w.signKey(w.key, scan(img, w.now.Add(48*time.Hour), nil))
			return e.scan
		}, production, "", RuleScanTooOld},
		{"critical finding", func(w *world, img name.Digest, e *evidence) []byte {
			e.scan = w.signKey(w.key, scan(img, w.now, map[string]string{"CVE-2026-0002": "CRITICAL"}))
			return e.scan
		}, staging, "", RuleScanFindings},
		{"CVSS score above the threshold", func(w *world, img name.Digest, e *evidence) []byte {
			e.scan = w.signKey(w.key, scan(img, w.now, map[string]string{"CVE-2026-0003": "7.5"}))
			return e.scan
		}, staging, "", RuleScanFindings},
		{"unreadable severity counts as critical", func(w *world, img name.Digest, e *evidence) []byte {
			e.scan = w.signKey(w.key, scan(img, w.now, map[string]string{"CVE-2026-0004": "whatever"}))
			return e.scan
		}, staging, "", RuleScanFindings},
		{"no scan", func(_ *world, _ name.Digest, e *evidence) []byte { e.scan = nil; return nil },
			staging, "", RuleAttestationMissing},
		{"keyless signature and attestations", func(w *world, img name.Digest, e *evidence) []byte {
			w.keyless(img, e, ciIdentity, ciIssuer)
			return nil
		}, keyless, sourceCommit, ""},
		{"keyless: another identity", func(w *world, img name.Digest, e *evidence) []byte {
			w.keyless(img, e, "https://github.com/attacker/checkout/.github/workflows/release.yaml@refs/heads/main", ciIssuer)
			return e.sig
		}, keyless, "", RuleSignatureIdentity},
		{"keyless: another issuer", func(w *world, img name.Digest, e *evidence) []byte {
			w.keyless(img, e, ciIdentity, "https://accounts.attacker.example")
			return e.sig
		}, keyless, "", RuleSignatureIdentity},
		{"keyless: certificate of another root", func(w *world, img name.Digest, e *evidence) []byte {
			w.keyless(img, e, ciIdentity, ciIssuer)
			e.sig = w.signKeyless(w.rogue, ciIdentity, ciIssuer, signatureOf(img))
			return e.sig
		}, keyless, "", RuleSignatureInvalid},
		{"keyless: a key signature where the policy wants an identity", func(*world, name.Digest, *evidence) []byte { return nil },
			keyless, "", RuleSignatureInvalid},
		{"keyless: identity regexp", func(w *world, img name.Digest, e *evidence) []byte {
			w.keyless(img, e, ciIdentity, ciIssuer)
			return nil
		}, func() *v1alpha1.TrustPolicy {
			tp := keyless()
			k := tp.Signatures[0].Keyless
			k.Identity, k.IdentityRegexp = "", `^https://github\.com/example/checkout/\.github/workflows/`
			return tp
		}, "", ""},
	}
	for _, mode := range []struct {
		name      string
		referrers bool
	}{{"referrers", true}, {"cosign tags", false}} {
		t.Run(mode.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					w := newWorld(t, mode.referrers)
					img := w.image("checkout")
					e := w.ciEvidence(img)
					named := c.edit(w, img, e)
					w.attach(img, e.all()...)
					ev, err := Verify(context.Background(), w.policy("staging", c.policy()), img.String(),
						Options{SourceCommit: c.commit, Now: w.now})
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

// keyless replaces e by bundles of the keyless identity and issuer.
func (w *world) keyless(img name.Digest, e *evidence, identity, issuer string) {
	e.sig = w.signKeyless(w.sigstore, identity, issuer, signatureOf(img))
	e.prov = w.signKeyless(w.sigstore, identity, issuer, provenance(img, builderID, sourceRepo, sourceCommit))
	e.sbom = w.signKeyless(w.sigstore, identity, issuer, sbom(img, PredicateCycloneDX))
	e.scan = w.signKeyless(w.sigstore, identity, issuer, scan(img, w.now.Add(-time.Hour), nil))
}
