package chainview

import (
	"fmt"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/promotion"
)

// ScanView is the scan summary a vulnerability-scan bundle's record
// carries (promote candidate read it from the bundle it verified; the
// view reads no registry).
type ScanView struct {
	// Finished is when the scan finished; Before how long before the
	// candidacy (0: not a candidacy the view judges).
	Finished time.Time
	Before   time.Duration
	// Worst is the highest severity of its findings, WorstFindings how
	// many have it, Findings how many it lists.
	Worst                   string
	WorstFindings, Findings int
	// Proven is true when the bundle's seal is proven (gate.SealedInGit
	// seals the summary too): else the summary is only what the record
	// says now.
	Proven bool
}

// scanView is the summary of it, a bundle of rec whose verdict is status
// (nil: it carries none, or one that does not read).
func scanView(it promotion.EvidenceItem, rec *promotion.Record, candidacy bool, status Status) *ScanView {
	if !it.Scanned() {
		return nil
	}
	fin, err := time.Parse(time.RFC3339, it.ScanFinished)
	if err != nil {
		return nil
	}
	v := &ScanView{Finished: fin, Worst: it.WorstSeverity, WorstFindings: it.WorstFindings, Findings: it.Findings, Proven: status == Proven}
	if candidacy && len(rec.History) > 0 {
		v.Before = rec.History[0].At.Sub(fin)
	}
	return v
}

// Text says it in one line: "scanned 3h0m before candidacy, worst: HIGH
// (2 of 5 findings)"; an unproven one says it is only what the record
// claims.
func (v *ScanView) Text() string {
	var b strings.Builder
	if !v.Proven {
		b.WriteString("not proven (the record's claim): ")
	}
	switch {
	case v.Before > 0:
		fmt.Fprintf(&b, "scanned %s before candidacy", age(v.Before.Round(time.Minute)))
	default:
		fmt.Fprintf(&b, "scanned %s", v.Finished.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if v.Findings == 0 {
		b.WriteString(", no finding")
		return b.String()
	}
	fmt.Fprintf(&b, ", worst: %s (%d of %d findings)", strings.ToUpper(v.Worst), v.WorstFindings, v.Findings)
	return b.String()
}

// Unsummarized reports whether a scan bundle carries no summary (a record
// written before candidacy recorded it).
func (c *Chain) Unsummarized() bool {
	for _, b := range c.Bundles {
		if b.Kind == "vulnerability-scan" && b.Scan == nil {
			return true
		}
	}
	return false
}
