package chainview

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile"
)

// NoChecks is the status of a CheckSet whose checks file declares no
// check: nothing to pass.
const NoChecks Status = "none"

// Bundle is one supply-chain evidence bundle the record carries
// (artifact.evidence.items), where Git holds it and what proves it.
type Bundle struct {
	promotion.EvidenceItem
	// Subject is the image digest the bundle was verified for.
	Subject string
	// File is the record that carries it, Commit the candidate commit
	// that sealed it ("" when the view does not judge the seal: a record
	// that carries its candidacy's evidence further).
	File, Commit string
	// Status is proven when the candidacy's gates that Git answers
	// (gate.CandidacyClaim, gate.SealedInGit) prove the record's evidence;
	// Summary says what rests on what.
	Status  Status
	Summary string
	// Scan is a vulnerability scan's age and worst finding as the record
	// carries them (nil: none recorded).
	Scan *ScanView
}

// CheckSet is the runtime checks of one evidence file, as the notifier
// signed them, and the gate's verdict on them (ledger.ChecksPassed).
type CheckSet struct {
	// Environment is where the checks ran; Role is "source" (the
	// acceptance that verified the artifact) or "target".
	Environment, Role string
	// File is the evidence file, Commit the commit it was read at;
	// Declared is the checks file the verdict reads.
	File, Commit, Declared string
	Checks                 []evidence.Check
	// Soak is the declared soak, SoakStartedAt and VerifiedAt when it
	// started and when the images were verified (nil: not recorded).
	Soak                      string
	SoakStartedAt, VerifiedAt *time.Time
	// Status is proven when ledger.ChecksPassed passes them and the
	// evidence file itself proves the acceptance (its arrow); Summary
	// says why not.
	Status  Status
	Summary string
}

// Soaked is how long the soak lasted before the verification (0: not
// recorded).
func (s *CheckSet) Soaked() time.Duration {
	if s.SoakStartedAt == nil || s.VerifiedAt == nil {
		return 0
	}
	return s.VerifiedAt.Sub(*s.SoakStartedAt)
}

// Scanned reports whether a bundle is a vulnerability scan.
func (c *Chain) Scanned() bool {
	for _, b := range c.Bundles {
		if b.Kind == "vulnerability-scan" {
			return true
		}
	}
	return false
}

// bundles are the supply-chain bundles of rec: for a record VERIFIED by
// its candidacy, each proven or broken as its sealed-evidence arrow
// (gate.SealedInGit), linked to the candidate commit; for a record that
// carries its candidacy's evidence further, pending on the PR gate's
// re-verification, which needs the registry the view never reads.
func (c *chainer) bundles(ctx context.Context, rec *promotion.Record, ch *Chain) ([]Bundle, error) {
	ev := rec.Artifact.Evidence
	if ev == nil || len(ev.Items) == 0 {
		return nil, nil
	}
	file := promotion.RecordPath(rec.App, rec.Target.Environment)
	status, summary, commit := Pending, fmt.Sprintf("verified at candidacy %s in %s; the PR gate verifies it again against "+
		"the registry, which the view does not read", orDash(ev.Candidacy), orDash(ev.Environment)), ""
	if v := rec.VerifiedIn; v != nil && v.IsCandidacy() && len(ch.Arrows) >= 5 {
		sealed := ch.Arrows[3] // the sealed-evidence arrow
		status, summary = sealed.Status, sealed.Summary
		if sealed.Status == Proven {
			summary = "sealed by the candidate commit's message; verified against " + rec.Target.Environment + "'s trust policy by promote verify"
		}
		var err error
		if commit, err = gate.CandidateCommit(ctx, c.repo, c.rev, rec); err != nil {
			return nil, fmt.Errorf("finding the candidate commit of %s: %w", rec.PromotionID, err)
		}
	}
	out := make([]Bundle, 0, len(ev.Items))
	for _, it := range ev.Items {
		out = append(out, Bundle{EvidenceItem: it, Subject: rec.Artifact.Digest, File: file, Commit: commit, Status: status, Summary: summary,
			Scan: scanView(it, rec, commit != "", status)})
	}
	return out, nil
}

// checkSet is the runtime checks of ev, the evidence file file of rec
// read at commit, judged by ledger.ChecksPassed; arrow is the arrow that
// proves (or not) the evidence itself.
func (c *chainer) checkSet(ctx context.Context, role string, rec *promotion.Record, ev *evidence.Record, file, commit string,
	arrow Arrow) (CheckSet, error) {
	s := CheckSet{Environment: ev.Environment, Role: role, File: file, Commit: commit, Declared: path.Join(rec.Target.Path, checkfile.File),
		Checks: ev.Checks, Soak: ev.Soak, SoakStartedAt: ev.SoakStartedAt, VerifiedAt: ev.VerifiedAt}
	why, err := ledger.ChecksPassed(ctx, c.repo, rec, ev)
	if err != nil {
		why, err = refusal(err) // a checks file that does not parse is a reason
	}
	switch {
	case err != nil:
		return s, fmt.Errorf("judging the runtime checks of %s: %w", file, err)
	case why != "":
		s.Status, s.Summary = Broken, why
	case len(ev.Checks) == 0:
		s.Status, s.Summary = NoChecks, fmt.Sprintf("%s declares no runtime check at %s", s.Declared, short(ev.ObservedTree()))
	case arrow.Status != Proven:
		s.Status = Pending
		s.Summary = fmt.Sprintf("every declared check passed after the soak, but the evidence does not prove the acceptance (%s: %s)", arrow.Name,
			arrow.Summary)
	default:
		s.Status, s.Summary = Proven, fmt.Sprintf("every check %s declares at %s passed after a completed soak", s.Declared, short(ev.ObservedTree()))
	}
	return s, nil
}
