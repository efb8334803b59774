//go:build e2e

package fluxcontrol

import (
	"encoding/json"
	"testing"

	"github.com/throughline-dev/throughline/promotion"
)

// rollbackToA is experiment 6: production runs B (experiment 1);
// throughline rollback --to previous proposes A again (a new attempt,
// VERIFIED by production's own acceptance of A: the baseline adopted with
// throughline adopt in the setup and ACCEPTED by the notifier, A still in
// the registry); two signed approvals, promote check, merge;
// kustomize-controller applies the rollback's merge commit, Pods run A,
// the notifier writes the evidence of the rollback attempt.
func (l *lab) rollbackToA(t *testing.T) {
	l.tip()
	r := l.run("rollback", "--repo", l.g.dir, "--app", accName, "--env", "production", "--to", "previous", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("arrow production acceptance of A -> rollback: exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
	}
	var rb struct {
		Proposal struct {
			Record *promotion.Record `json:"record"`
			Branch string            `json:"branch"`
		} `json:"proposal"`
		From string `json:"from"`
	}
	must(t, json.Unmarshal([]byte(r.Stdout), &rb))
	rec := rb.Proposal.Record
	want := promotion.AttemptKey{App: accName, Digest: l.a, Environment: "production", Attempt: 2}.ID()
	if rec.PromotionID != want || rec.State != promotion.Verified || rb.From != l.b || !rec.VerifiedIn.IsPriorAcceptance() {
		t.Fatalf("arrow production acceptance of A -> rollback proposal: %s %s from %s (%+v), want %s VERIFIED by prior acceptance from B",
			rec.PromotionID, rec.State, rb.From, rec.VerifiedIn, want)
	}
	merge := l.approveCheckMerge(rb.Proposal.Branch, "roll checkout back to 1.4.2 (A)")
	if id := l.deliverProduction(merge, l.a, "A"); id != want {
		t.Fatalf("arrow rollback -> production evidence: accepted %s, want %s", id, want)
	}
}
