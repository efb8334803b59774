//go:build e2e

package argocdcontrol

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/promotion"
)

// freezeOverride is experiment 7 (issue 39) against the real application
// controller and the notifier: a platform commit freezes production (its
// registry entry's freezes, read at the base); rollback to B is refused
// (exit 3, frozen: rollbackInFreeze holds it) and opens its attempt only
// with --for-override; two signed approvals are not enough (promote check
// exit 3: frozen), nor is alice's signed freeze override alone
// (override-count: production needs two); with bob's it is lifted (check
// exit 0); the merge is reconciled RECONCILING,
// production's controller syncs it, the Pods run B, and the notifier's
// resync accepts it: the record ACCEPTED at the acceptance commit and its
// evidence carry both overrides, bound to the attempt. The freeze is lifted after.
func (e *env) freezeOverride(run chainRun) {
	p := e.production()
	polFile := filepath.Join(e.work, promotion.PolicyFile)
	pol, err := os.ReadFile(polFile)
	must(e.t, err)
	now := time.Now().UTC()
	freeze := fmt.Sprintf("  production:\n    freezes:\n      - name: incident\n        from: %q\n        until: %q\n"+
		"        reason: the payment provider's incident\n", now.Add(-time.Hour).Format(time.RFC3339), now.Add(3*time.Hour).Format(time.RFC3339))
	if strings.Count(string(pol), "\n  production:\n") != 1 {
		e.t.Fatalf("%s: no one production entry to freeze", promotion.PolicyFile)
	}
	must(e.t, os.WriteFile(polFile, []byte(strings.Replace(string(pol), "\n  production:\n", "\n"+freeze, 1)), 0o644))
	e.git("commit", "-q", "-am", "platform: production frozen (incident)")
	e.git("push", "-q", "origin", "main")

	dir := e.clone()
	rollback := func(extra ...string) (int, string, string) {
		r := e.cli(run.isolated, append([]string{"rollback", "--repo", dir, "--app", "checkout", "--env", "production", "--to", "previous",
			"-o", "json"}, extra...)...)
		return r.Code, r.Stdout, r.Stderr
	}
	if code, out, errs := rollback(); code != 3 || !strings.Contains(out+errs, `freeze "incident"`) {
		e.t.Fatalf("arrow frozen production -> rollback refused (frozen): exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs := rollback("--for-override")
	if code != 0 {
		e.t.Fatalf("arrow frozen production -> rollback --for-override opens the attempt: exit %d\n%s\n%s", code, out, errs)
	}
	var rb struct {
		Proposal struct {
			Record *promotion.Record `json:"record"`
			Branch string            `json:"branch"`
		} `json:"proposal"`
	}
	must(e.t, json.Unmarshal([]byte(out), &rb))
	rec, branch := rb.Proposal.Record, rb.Proposal.Branch
	if rec == nil || rec.Artifact.Digest != run.b || rec.State != promotion.Verified || !rec.VerifiedIn.IsPriorAcceptance() {
		e.t.Fatalf("arrow frozen production -> rollback to B VERIFIED by its acceptance: %s", out)
	}
	approve := func(k sshkey.Key, extra ...string) {
		a := e.clone()
		e.signAs(a, k)
		r := e.cli(run.isolated, append([]string{"promote", "approve", "--repo", a, "--app", "checkout", "--to", "production"}, extra...)...)
		if r.Code != 0 || !strings.Contains(r.Stdout, branch) {
			e.t.Fatalf("arrow %s %v on %s: exit %d\n%s\n%s", k.Principal, extra, branch, r.Code, r.Stdout, r.Stderr)
		}
	}
	// check is the PR job: its exit code and the rules of its findings.
	check := func() (int, string) {
		pr := e.clone()
		r := e.cli(run.isolated, "promote", "check", "--repo", pr, "--base", "origin/main", "--head", "origin/"+branch, "-o", "json")
		var rep struct{ Findings []struct{ Rule string } }
		if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
			e.t.Fatalf("promote check -o json: exit %d: %v\n%s\n%s", r.Code, err, r.Stdout, r.Stderr)
		}
		var rules []string
		for _, f := range rep.Findings {
			rules = append(rules, f.Rule)
		}
		return r.Code, strings.Join(rules, " ") + "\n" + r.Stderr
	}
	for _, k := range []sshkey.Key{e.alice, e.bob} {
		approve(k, "--expires", "1h")
	}
	if code, out := check(); code != 3 || !strings.HasPrefix(out, "frozen\n") {
		e.t.Fatalf("arrow APPROVED in a freeze -> promote check refuses (frozen only): exit %d\n%s", code, out)
	}
	const reason = "roll back to 1.5.0 during the payment incident (INC-4711)"
	approve(e.alice, "--override-freeze", "--reason", reason, "--expires", "2h")
	if code, out := check(); code != 3 || !strings.HasPrefix(out, "override-count frozen\n") {
		e.t.Fatalf("arrow one signed freeze override of the two production needs -> promote check refuses (override-count, frozen): exit %d\n%s",
			code, out)
	}
	approve(e.bob, "--override-freeze", "--reason", reason, "--expires", "2h")
	if code, out := check(); code != 0 {
		e.t.Fatalf("arrow two signed freeze overrides -> promote check passes: exit %d\n%s", code, out)
	}
	pr := e.clone()
	e.in(pr, "merge", "-q", "--no-ff", "-m", "Merge "+branch, "origin/"+branch)
	e.in(pr, "push", "-q", "origin", "HEAD:main")
	merge := e.in(pr, "rev-parse", "HEAD")
	e.git("pull", "-q", "--ff-only", "origin", "main")
	p.refresh("normal")
	p.syncedAt("overridden merge commit -> production observed revision (sync)", merge)
	d := p.deployment()
	if img := imageOf(d); img != run.repo+":1.5.0@"+run.b {
		e.t.Fatalf("arrow overridden merge commit -> live Deployment at B: image %s", img)
	}
	p.rollout(d, "p4", run.b)
	p.waitHealthy("production Pods run B in the freeze -> app Healthy")
	prod := e.reconcileAndAccept(p, run.svc, merge)
	if prod.PromotionID != rec.PromotionID || prod.State != promotion.Accepted || len(prod.Overrides) != 2 {
		e.t.Fatalf("arrow overridden promotion -> ACCEPTED with its overrides: %s %s, %d overrides", prod.PromotionID, prod.State, len(prod.Overrides))
	}
	for i, k := range []sshkey.Key{e.alice, e.bob} {
		if o := prod.Overrides[i]; o.Approver != k.Principal || o.Reason != reason || o.InputHash == "" {
			e.t.Fatalf("arrow ACCEPTED record -> override %d: %+v, want %s's", i, o, k.Principal)
		}
	}
	if ev := e.evidenceAt(e.remoteTip(e.remote), prod.Accepted.RuntimeEvidence); len(ev.Overrides) != 2 ||
		ev.Overrides[0].InputHash != prod.Overrides[0].InputHash || ev.Overrides[1].InputHash != prod.Overrides[1].InputHash {
		e.t.Fatalf("arrow ACCEPTED -> evidence %s with the overrides: %+v", prod.Accepted.RuntimeEvidence, ev.Overrides)
	}
	e.t.Logf("frozen production: %s ACCEPTED at %.12s with the freeze overrides of %s and %s", prod.PromotionID, merge,
		prod.Overrides[0].Approver, prod.Overrides[1].Approver)

	// The freeze lifted (a platform commit): the later experiments run in
	// an open production.
	must(e.t, os.WriteFile(polFile, pol, 0o644))
	e.git("commit", "-q", "-am", "platform: production's freeze lifted")
	e.git("push", "-q", "origin", "main")
}
