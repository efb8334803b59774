package gate

import (
	"slices"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/promotion"
)

// FuzzParseSeal: a candidate commit's message is untrusted input (anyone
// who pushes a branch writes one). Reading any message never panics, finds
// the candidacy only on a line that is exactly its Promotion line, reads
// one bundle per Evidence line and one scan summary per bundle; and what
// promote candidate seals (its lines after any other text) reads back
// exactly, whatever the other text holds.
func FuzzParseSeal(f *testing.F) {
	f.Add("candidate api sha256:9d9d for production\n\nPromotion: api-production-9d9d9d9d9d9d-1\nEvidence: signature sha256:aa\n"+
		"Evidence-Scan: sha256:aa finished=2026-12-01T00:00:00Z worst=high worstFindings=1 findings=3\nEvidence-Manifest: sha256:bb\n",
		"api-production-9d9d9d9d9d9d-1", "provenance", "sha256:"+strings.Repeat("c", 64))
	f.Add("Promotion: x\r\nEvidence: \r\n  Evidence: a b c\n\x00Evidence-Scan:\n", "x", "sbom", "sha256:dd")
	f.Add("", "", "", "")
	f.Fuzz(func(t *testing.T, msg, id, kind, digest string) {
		items, _, scans, ok := parseSeal(msg, id)
		lines, evidence := 0, 0
		found := false
		for l := range strings.Lines(msg) {
			l = strings.TrimSpace(l)
			lines++
			if l == SealPromotion+id {
				found = true
			}
			if strings.HasPrefix(l, SealEvidence) {
				evidence++
			}
		}
		if ok != found {
			t.Fatalf("ok %v for a message whose Promotion line is there: %v", ok, found)
		}
		if len(items) != evidence || len(scans) > lines {
			t.Fatalf("%d bundles from %d Evidence lines, %d scans from %d lines", len(items), evidence, len(scans), lines)
		}

		// What promote candidate seals, after other text that carries no
		// seal line of its own.
		if id == "" || strings.ContainsAny(id+kind+digest, " \t\r\n\v\f\u0085\u00a0") || kind == "" || digest == "" {
			return
		}
		var other strings.Builder
		for l := range strings.Lines(msg) {
			tl := strings.TrimSpace(l)
			if strings.HasPrefix(tl, "Promotion:") || strings.HasPrefix(tl, "Evidence") {
				continue
			}
			other.WriteString(strings.TrimRight(l, "\r\n") + "\n")
		}
		want := []promotion.EvidenceItem{{Kind: kind, Digest: digest}, {Kind: "sbom", Digest: "sha256:" + strings.Repeat("e", 64)}}
		sealed := other.String() + "\n" + SealPromotion + id + "\n"
		for _, it := range want {
			sealed += SealEvidence + it.Kind + " " + it.Digest + "\n"
		}
		summary := digest + " finished=2026-12-01T00:00:00Z worst=high worstFindings=1 findings=3"
		sealed += SealScan + summary + "\n" + SealManifest + "sha256:" + strings.Repeat("f", 64) + "\n"
		got, manifest, gotScans, ok := parseSeal(sealed, id)
		if !ok || !slices.Equal(got, want) || manifest == nil || *manifest != "sha256:"+strings.Repeat("f", 64) ||
			len(gotScans) != 1 || gotScans[digest] != summary {
			t.Fatalf("sealed %q, read back ok %v, %v, manifest %v, scans %v", sealed, ok, got, manifest, gotScans)
		}
	})
}
