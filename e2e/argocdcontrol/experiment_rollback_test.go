//go:build e2e

package argocdcontrol

import (
	"encoding/json"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/promotion"
)

// rollbackToA is experiment 6: production ACCEPTED A (its baseline,
// adopted with throughline adopt), then B (experiment 1). throughline
// rollback --to previous proposes A as a new attempt on a branch, born
// VERIFIED by production's own acceptance of the adopted A (the registry
// still has A); two signed approvals, the PR job, the merge;
// production's controller syncs the merge commit, the Pods run A (played),
// the notifier's resync writes the rollback attempt's evidence.
func (e *env) rollbackToA(run chainRun) {
	p := e.production()
	dir := e.clone()
	r := e.cli(run.isolated, "rollback", "--repo", dir, "--app", "checkout", "--env", "production", "--to", "previous", "-o", "json")
	if r.Code != 0 {
		e.t.Fatalf("arrow production ACCEPTED A, B -> rollback proposal: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	var rb struct {
		Proposal struct {
			Record *promotion.Record `json:"record"`
			Branch string            `json:"branch"`
		} `json:"proposal"`
		From string `json:"from"`
	}
	must(e.t, json.Unmarshal([]byte(r.Stdout), &rb))
	rec := rb.Proposal.Record
	want := promotion.AttemptKey{App: "checkout", Digest: run.a, Environment: "production", Attempt: 2}.ID()
	prior := promotion.AttemptKey{App: "checkout", Digest: run.a, Environment: "production", Attempt: 1}.ID()
	if rec == nil || rec.PromotionID != want || rec.State != promotion.Verified || rb.From != run.b || !rec.VerifiedIn.IsPriorAcceptance() ||
		rec.VerifiedIn.PriorAcceptance.PromotionID != prior {
		e.t.Fatalf("arrow production ACCEPTED A -> rollback VERIFIED by that acceptance: %s", r.Stdout)
	}
	merge := e.approveAndMerge(p, rb.Proposal.Branch, run)
	d := p.deployment()
	if img := imageOf(d); img != run.repo+":1.4.2@"+run.a {
		e.t.Fatalf("arrow rollback merge commit -> live Deployment at A: image %s", img)
	}
	p.rollout(d, "p3", run.a)
	p.waitHealthy("production Pods run A again -> app Healthy")
	prod := e.reconcileAndAccept(p, run.svc, merge)
	if prod.PromotionID != want || prod.State != promotion.Accepted || prod.Accepted.ObservedRevision != merge ||
		prod.Accepted.RuntimeEvidence != evidence.Path("production", "checkout", want) {
		e.t.Fatalf("arrow rollback observed revision -> production runtime evidence: %s %s %+v, want %s ACCEPTED at %.12s",
			prod.PromotionID, prod.State, prod.Accepted, want, merge)
	}
	e.t.Logf("rolled back to %s: %s ACCEPTED at the merge commit %.12s (%s)", short(run.a), want, merge, prod.Accepted.RuntimeEvidence)
}
