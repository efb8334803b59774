package promote

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/promotion"
)

// TestOneAttemptInFlight (issue 32, item 5): while production's attempt is
// RECONCILING on main, a pull request whose record replaces it with another
// attempt is refused by the gate (it was merged before, and the in-flight
// attempt ended with no decision). Once the attempt is ended explicitly
// (REJECTED on main by promote reject --branch main), the same pull
// request is no longer refused for it: a new attempt waits or supersedes
// explicitly.
func TestOneAttemptInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.unsignedApprovals()
	p := f.propose()
	now := time.Now()
	_, err := Verify(ctx, f.repo, VerifyRequest{App: "checkout", To: "production", Now: now})
	must(t, err)
	_, err = Approve(ctx, f.repo, ApproveRequest{App: "checkout", To: "production", Approver: "alice", Expires: now.Add(2 * time.Hour), Now: now,
		Renderer: renderer})
	must(t, err)
	approved := f.git("show", p.Branch+":gitops/"+promotion.RecordPath("checkout", "production"))
	f.git("merge", "-q", "--no-edit", p.Branch)
	tr, _, err := Reconcile(ctx, f.repo, ReconcileRequest{App: "checkout", To: "production", Now: now, By: "test", Renderer: renderer})
	must(t, err)
	if tr.Record.State != promotion.Reconciling {
		t.Fatalf("record %s", tr.Record.State)
	}
	// The attack: attempt 2 of the same digest, approved as attempt 1 was,
	// written over the in-flight record.
	second := promotion.AttemptKey{App: "checkout", Digest: p.Record.Artifact.Digest, Environment: "production", Attempt: 2}.ID()
	f.git("checkout", "-q", "-b", "attack", "main")
	f.write(map[string]string{promotion.RecordPath("checkout", "production"): strings.ReplaceAll(strings.Replace(approved, "attempt: 1", "attempt: 2", 1),
		p.Record.PromotionID, second)})
	f.commit("attempt 2 over the in-flight attempt 1")
	f.git("checkout", "-q", "main")
	rep := f.check("attack", now)
	i := slices.IndexFunc(rep.Findings, func(fd gate.Finding) bool { return fd.Rule == gate.RuleAttemptInFlight })
	if i < 0 {
		t.Fatalf("the replacement of an in-flight record is not refused: %v %q", rules(rep), rep.Refusals)
	}
	if fd := rep.Findings[i]; fd.Environment != "production" || fd.Old != p.Record.PromotionID || fd.New != second || fd.Field != "state" {
		t.Errorf("finding %+v", fd)
	}
	// Ended explicitly on main: the in-flight rule no longer holds.
	tr, err = Reject(ctx, f.repo, RejectRequest{App: "checkout", To: "production", Branch: "main", Reason: "superseded", By: "bob", Now: now})
	must(t, err)
	if tr.Record.State != promotion.Rejected || tr.Branch != "main" {
		t.Fatalf("reject on main: %+v", tr)
	}
	if rep := f.check("attack", now); slices.Contains(rules(rep), gate.RuleAttemptInFlight) {
		t.Fatalf("still in flight after REJECTED: %q", rep.Refusals)
	}
}
