package main

import (
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/promotion"
)

// TestVerifiedBy (issue 33, messages): the parenthesis of promote
// verify's line names what verified the record, by its kind, and never
// prints an empty field ("(evidence  at )" of a candidacy, which has no
// source environment): testdata/verified-by.golden.
func TestVerifiedBy(t *testing.T) {
	t.Parallel()
	digest := "sha256:" + strings.Repeat("a", 64)
	ev := &promotion.SupplyChain{Candidacy: "checkout-dev-aaaaaaaaaaaa-1", Environment: "dev",
		Items: []promotion.EvidenceItem{{Kind: "signature", Digest: "sha256:" + strings.Repeat("1", 64)}}, Manifest: "sha256:" + strings.Repeat("2", 64)}
	var b strings.Builder
	for _, tc := range []struct {
		name string
		v    *promotion.VerifiedIn
		ev   *promotion.SupplyChain
	}{
		{"candidacy", &promotion.VerifiedIn{Kind: promotion.KindCandidacy, Environment: "dev"}, ev},
		{"source environment", &promotion.VerifiedIn{Kind: promotion.KindEnvironment, Environment: "staging",
			RuntimeEvidence: "evidence/staging/checkout/checkout-staging-aaaaaaaaaaaa-1.json", EvidenceCommit: strings.Repeat("c", 40)}, nil},
		{"prior acceptance", &promotion.VerifiedIn{Kind: promotion.KindPriorAcceptance, Environment: "production",
			PriorAcceptance: &promotion.PriorAcceptance{PromotionID: "checkout-production-aaaaaaaaaaaa-1",
				Evidence: "evidence/production/checkout/checkout-production-aaaaaaaaaaaa-1.json", Commit: strings.Repeat("d", 40)}}, nil},
		{"adoption", &promotion.VerifiedIn{Kind: promotion.KindAdoption, Environment: "production"}, nil},
		{"not verified", nil, nil},
	} {
		rec := &promotion.Record{PromotionID: "checkout-dev-aaaaaaaaaaaa-1", VerifiedIn: tc.v,
			Artifact: promotion.Artifact{Digest: digest, Evidence: tc.ev}}
		got := verifiedBy(rec)
		if strings.Contains(got, "  ") || strings.Contains(got, " )") || strings.Contains(got, "()") {
			t.Errorf("%s: %q prints an empty field", tc.name, got)
		}
		b.WriteString(tc.name + ": VERIFIED ... at <commit>" + got + "\n")
	}
	golden.Compare(t, "testdata/verified-by.golden", []byte(b.String()))
}
