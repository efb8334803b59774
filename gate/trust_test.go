package gate

import (
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/promotion"
)

// TestEvidenceChangeNamesOnlyWhatChanged (issue 33, messages): a record
// whose evidence differs from its source's is refused naming the bundle
// that changed, not every digest of both.
func TestEvidenceChangeNamesOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	item := func(kind, hex string) promotion.EvidenceItem {
		return promotion.EvidenceItem{Kind: kind, Digest: "sha256:" + strings.Repeat(hex, 64)}
	}
	src := &promotion.SupplyChain{Candidacy: "checkout-staging-aaaaaaaaaaaa-1", Environment: "staging",
		Items: []promotion.EvidenceItem{item("signature", "1"), item("provenance", "2"), item("sbom", "3"), item("vulnerability-scan", "4")}}
	with := func(edit func(s *promotion.SupplyChain)) *promotion.SupplyChain {
		s := *src
		s.Items = append([]promotion.EvidenceItem(nil), src.Items...)
		edit(&s)
		return &s
	}
	for _, tc := range []struct {
		name    string
		got     *promotion.SupplyChain
		want    []string
		notWant []string
		// changed is the one bundle named (the refusal's field), if one.
		changed string
	}{
		{"a fresher scan swapped in", with(func(s *promotion.SupplyChain) { s.Items[3] = item("vulnerability-scan", "5") }),
			[]string{"vulnerability-scan sha256:5555", "in place of sha256:4444"},
			[]string{"sha256:1111", "sha256:2222", "sha256:3333", "added", "missing"}, item("", "5").Digest},
		{"a bundle dropped", with(func(s *promotion.SupplyChain) { s.Items = s.Items[:3] }),
			[]string{"vulnerability-scan sha256:4444", "missing"}, []string{"sha256:1111", "added"}, item("", "4").Digest},
		{"a bundle added", with(func(s *promotion.SupplyChain) { s.Items = append(s.Items, item("sbom", "6")) }),
			[]string{"sbom sha256:6666", "added"}, []string{"sha256:1111", "missing"}, item("", "6").Digest},
		{"another candidacy", with(func(s *promotion.SupplyChain) { s.Candidacy = "checkout-staging-bbbbbbbbbbbb-1" }),
			[]string{`candidacy "checkout-staging-bbbbbbbbbbbb-1", not "checkout-staging-aaaaaaaaaaaa-1"`}, []string{"sha256:"}, ""},
		{"none", nil, []string{"carries none"}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := evidenceChange(src, tc.got)
			if tc.changed != "" && (len(changed) != 1 || changed[0] != tc.changed) || tc.changed == "" && len(changed) != 0 {
				t.Errorf("changed bundles %q, want %q", changed, tc.changed)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q does not say %q", got, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("%q says %q, which did not change", got, w)
				}
			}
		})
	}
}
