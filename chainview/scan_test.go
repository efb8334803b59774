package chainview

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/chainview/chainfixture"
	"github.com/throughline-dev/throughline/promotion"
)

// TestScanSummaryShown: the promotion page and the API show a candidacy's
// scan age and worst finding as promote candidate recorded them in Git;
// a summary edited (or dropped) after the candidate commit sealed it is
// not shown as proven: its bundle is broken (evidence-differs, as
// gate.SealedInGit judges every bundle) and the row says the numbers are
// only the record's claim.
func TestScanSummaryShown(t *testing.T) {
	t.Parallel()
	const proven = "scanned 3h0m before candidacy, worst: HIGH (2 of 5 findings)"
	for _, tc := range []struct {
		name   string
		edit   func(it *promotion.EvidenceItem)
		status Status
		want   string
		why    string
	}{
		{"as sealed", nil, Proven, proven, ""},
		{"worst finding edited after candidacy", func(it *promotion.EvidenceItem) { it.WorstSeverity, it.WorstFindings = "low", 1 }, Broken,
			"not proven (the record&#39;s claim): scanned 3h0m before candidacy, worst: LOW (1 of 5 findings)", "its candidacy sealed"},
		{"scan time edited after candidacy", func(it *promotion.EvidenceItem) { it.ScanFinished = "2026-11-20T09:00:00Z" }, Broken,
			"not proven (the record&#39;s claim): scanned", "its candidacy sealed"},
		{"summary dropped after candidacy", func(it *promotion.EvidenceItem) {
			*it = promotion.EvidenceItem{Kind: it.Kind, Digest: it.Digest,
				PredicateType: it.PredicateType, Signer: it.Signer}
		}, Broken, "its candidacy sealed finished=", "says none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := chainfixture.New(t, example)
			rec := f.AcceptCandidacy("checkout", "dev", "1.5.0", chainfixture.Checkout, 1).Record
			if tc.edit != nil {
				tc.edit(&rec.Artifact.Evidence.Items[2])
				data, err := rec.Marshal()
				must(t, err)
				f.Commit("a better-looking scan", map[string][]byte{promotion.RecordPath("checkout", "dev"): data})
			}
			h := &Handler{Repo: f.Repo}
			srv := httptest.NewServer(h)
			defer srv.Close()
			site, err := h.current(context.Background())
			must(t, err)
			var buf bytes.Buffer
			found, err := site.Promotion(&buf, rec.PromotionID)
			must(t, err)
			if !found {
				t.Fatalf("no page of %s", rec.PromotionID)
			}
			page := buf.String()
			row := page[strings.Index(page, "<td>vulnerability-scan"):]
			row = row[:strings.Index(row, "</tr>")]
			if !strings.Contains(row, tc.want) || !strings.Contains(row, `class="status `+string(tc.status)+`"`) || !strings.Contains(row, tc.why) {
				t.Errorf("the scan's row does not say %q, %s, %q:\n%s", tc.want, tc.status, tc.why, row)
			}
			if tc.status != Proven && strings.Contains(page, proven) {
				t.Errorf("an edited summary is shown as proven:\n%s", row)
			}
			var st AppStatus
			req, err := http.NewRequest("GET", srv.URL+APIApplication+"?app=checkout&env=dev", nil)
			must(t, err)
			if code := getJSON(t, req, &st); code != 200 || st.Chain == nil || len(st.Chain.Bundles) != 3 {
				t.Fatalf("API: %d %+v", code, st.Chain)
			}
			b := st.Chain.Bundles[2]
			switch {
			case b.Kind != "vulnerability-scan" || b.Status != tc.status:
				t.Errorf("API bundle %+v, want the scan %s", b, tc.status)
			case tc.edit == nil && (b.Scan == nil || !b.Scan.Proven || b.Scan.Text != proven || b.Scan.BeforeCandidacy != 3*3600 ||
				b.Scan.Worst != "high" || b.Scan.WorstFindings != 2 || b.Scan.Findings != 5):
				t.Errorf("API scan %+v, want %q proven", b.Scan, proven)
			case tc.edit != nil && b.Scan != nil && b.Scan.Proven:
				t.Errorf("API: an edited summary is proven: %+v", b.Scan)
			}
		})
	}
}
