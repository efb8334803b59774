package trust

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/trust/trusttest"
)

// TestBadBundlesNamed (issue 33, messages): a rogue signing key and a
// tampered payload both make sigstore say "accepted signatures do not
// match threshold, Found: 0, Expected 1". The refusal says which statement
// kind failed and why: the key hint found and the trusted one, or that the
// signature does not verify the payload. Every bad bundle is reported, not
// only the first. The wording is testdata/bad-bundles.golden.
func TestBadBundlesNamed(t *testing.T) {
	t.Parallel()
	w := trusttest.New(t, true)
	pol := policyOf(w, "production", trusttest.KeyPolicy(productionAge))
	hints := []string{string(w.Key.GetHint()), "<the CI key's hint>", string(w.OtherKey.GetHint()), "<the rogue key's hint>"}
	record := golden.ErrorLines(t, "testdata/bad-bundles.golden", 4, hints...)
	tests := []struct {
		name string
		// bad replaces bundles of CI's evidence and returns them, in the
		// order of the requirements they fail.
		bad func(img name.Digest, e *trusttest.Evidence) [][]byte
	}{
		{"a signature by a rogue key", func(img name.Digest, e *trusttest.Evidence) [][]byte {
			e.Sig = w.SignKey(w.OtherKey, trusttest.Signature(img))
			return [][]byte{e.Sig}
		}},
		{"a tampered provenance payload", func(img name.Digest, e *trusttest.Evidence) [][]byte {
			e.Prov = tamper(t, e.Prov, trusttest.Provenance(img, "https://attacker.example/builder", trusttest.SourceRepo, trusttest.SourceCommit))
			return [][]byte{e.Prov}
		}},
		{"a scan by a rogue key", func(img name.Digest, e *trusttest.Evidence) [][]byte {
			e.Scan = w.SignKey(w.OtherKey, trusttest.Scan(img, w.Now, nil))
			return [][]byte{e.Scan}
		}},
		{"a tampered signature and an SBOM by a rogue key", func(img name.Digest, e *trusttest.Evidence) [][]byte {
			e.Sig = tamper(t, e.Sig, trusttest.Statement(trusttest.Hex(img), PredicateSignature, map[string]any{"forged": true}))
			e.SBOM = w.SignKey(w.OtherKey, trusttest.SBOM(img, trusttest.PredicateCycloneDX+"/v1.5"))
			return [][]byte{e.Sig, e.SBOM}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			img := w.Image("checkout")
			e := w.CIEvidence(img)
			bad := tt.bad(img, e)
			w.Attach(img, e.All()...)
			for name, verify := range map[string]func() error{
				"discovery": func() error {
					_, err := Verify(context.Background(), pol, img.String(), Options{Now: w.Now})
					return err
				},
				"recorded": func() error {
					_, err := VerifyRecorded(context.Background(), pol, img.String(), (&Evidence{Items: items(e)}).Digests(), Options{Now: w.Now})
					return err
				},
			} {
				err := verify()
				rs := exitcode.Refusals(err)
				if len(rs) != len(bad) || exitcode.Code(err) != exitcode.Refused {
					t.Fatalf("%s: %d refusals (exit %d), want one for each of the %d bad bundles: %v", name, len(rs), exitcode.Code(err), len(bad), err)
				}
				for i, r := range rs {
					if r.Rule != RuleSignatureInvalid || r.Field != "evidence "+trusttest.DigestOf(bad[i]) || r.Object != img.String() {
						t.Fatalf("%s: refusal %d: %s %s %s, want %s naming %s", name, i, r.Rule, r.Field, r.Object, RuleSignatureInvalid,
							trusttest.DigestOf(bad[i]))
					}
				}
				if name == "recorded" {
					repl := []string{img.String(), "<image>"}
					for i, b := range bad {
						repl = append(repl, trusttest.DigestOf(b), "<bad bundle "+string(rune('1'+i))+">")
					}
					record(tt.name, errors.New(strings.NewReplacer(repl...).Replace(err.Error())))
				}
			}
		})
	}
}

// items are e's bundles as evidence items (their digests, in order).
func items(e *trusttest.Evidence) []Item {
	var out []Item
	for _, b := range e.All() {
		out = append(out, Item{Digest: trusttest.DigestOf(b)})
	}
	return out
}
