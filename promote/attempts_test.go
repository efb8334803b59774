package promote

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
)

// approved proposes checkout to production and verifies and approves the
// attempt without naming its branch.
func (f *fixture) approved(now time.Time) *Proposal {
	f.t.Helper()
	ctx := context.Background()
	p := f.propose()
	if p.Existing {
		f.t.Fatalf("proposal %s is an existing attempt (state %s), want a new one", p.Record.PromotionID, p.Record.State)
	}
	tr, err := Verify(ctx, f.repo, VerifyRequest{App: "checkout", To: "production", Now: now})
	must(f.t, err)
	if tr.Branch != p.Branch {
		f.t.Fatalf("verify picked %s, want the new attempt %s", tr.Branch, p.Branch)
	}
	tr, err = Approve(ctx, f.repo, ApproveRequest{App: "checkout", To: "production", Approver: "alice", Expires: now.Add(2 * time.Hour), Now: now, Renderer: renderer})
	must(f.t, err)
	if tr.Branch != p.Branch {
		f.t.Fatalf("approve picked %s, want the new attempt %s", tr.Branch, p.Branch)
	}
	return p
}

// stopOnMain moves production's record on main to state (the notifier's
// HALTED, or a REJECTED written there) and commits it.
func (f *fixture) stopOnMain(state promotion.State) {
	f.t.Helper()
	file := promotion.RecordPath("checkout", "production")
	rec, err := promotion.Parse(file, []byte(f.read(file)))
	must(f.t, err)
	must(f.t, rec.Stop(state, "the controller refused the apply", time.Now(), "test"))
	data, err := rec.Marshal()
	must(f.t, err)
	f.write(map[string]string{file: string(data)})
	f.commit("production " + string(state))
}

// TestSameDigestAfterStop: a HALTED or REJECTED attempt never blocks the
// next one. Propose opens attempt n+1 for the same digest (the overlay
// already holds it after a merge: the edit is empty, the record new), the
// finished attempt's branch is not counted as open, and attempt n+1 passes
// the PR gate and reconciles.
func TestSameDigestAfterStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		stop func(f *fixture, p *Proposal)
	}{
		{"halted after the merge", func(f *fixture, p *Proposal) {
			f.git("merge", "-q", "--no-edit", p.Branch)
			_, _, err := Reconcile(ctx, f.repo, ReconcileRequest{App: "checkout", To: "production", Now: time.Now(), By: "test", Renderer: renderer})
			must(f.t, err)
			f.stopOnMain(promotion.Halted)
		}},
		{"rejected on its branch", func(f *fixture, p *Proposal) {
			_, err := Reject(ctx, f.repo, RejectRequest{App: "checkout", To: "production", Reason: "wrong notes", By: "test", Now: time.Now()})
			must(f.t, err)
		}},
		{"rejected after the merge", func(f *fixture, p *Proposal) {
			f.git("merge", "-q", "--no-edit", p.Branch)
			f.stopOnMain(promotion.Rejected)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.unsignedApprovals()
			now := time.Now()
			first := f.approved(now)
			tc.stop(f, first)
			second := f.approved(now)
			if second.Record.Attempt != first.Record.Attempt+1 || second.Record.Artifact.Digest != first.Record.Artifact.Digest ||
				second.Branch == first.Branch || second.Record.State != promotion.Candidate {
				t.Fatalf("second proposal %s on %s (state %s), want attempt %d of the same digest on a new branch",
					second.Record.PromotionID, second.Branch, second.Record.State, first.Record.Attempt+1)
			}
			if again := f.propose(); !again.Existing || again.Record.PromotionID != second.Record.PromotionID {
				t.Fatalf("the same request again: %s existing=%v, want %s", again.Record.PromotionID, again.Existing, second.Record.PromotionID)
			}
			if rep := f.check(second.Branch, now); !rep.OK {
				t.Fatalf("check of attempt %d: %v %q", second.Record.Attempt, rules(rep), rep.Refusals)
			}
			f.git("merge", "-q", "--no-edit", second.Branch)
			tr, _, err := Reconcile(ctx, f.repo, ReconcileRequest{App: "checkout", To: "production", Now: now, By: "test", Renderer: renderer})
			must(t, err)
			if tr.Record.PromotionID != second.Record.PromotionID || tr.Record.State != promotion.Reconciling {
				t.Fatalf("reconciled %s %s, want %s RECONCILING", tr.Record.PromotionID, tr.Record.State, second.Record.PromotionID)
			}
		})
	}
}

// TestAttemptBranchSkipsFinished: after a completed promotion the merged
// branch is deleted by reconcile and a leftover finished branch (merged,
// or REJECTED) is not an open attempt: the next attempt is picked without
// --branch.
func TestAttemptBranchSkipsFinished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	f.unsignedApprovals()
	now := time.Now()
	first := f.approved(now)
	f.git("merge", "-q", "--no-edit", first.Branch)
	tr, _, err := Reconcile(ctx, f.repo, ReconcileRequest{App: "checkout", To: "production", Now: now, By: "test", Renderer: renderer})
	must(t, err)
	if got := f.git("branch", "--list", first.Branch); got != "" {
		t.Fatalf("the merged attempt branch %s is still there after reconcile", first.Branch)
	}
	if len(tr.Closed) != 1 || tr.Closed[0] != first.Branch {
		t.Fatalf("reconcile closed %v, want [%s]", tr.Closed, first.Branch)
	}
	// Leftover branches of finished attempts, as a forge leaves them.
	f.git("branch", first.Branch, "main^")
	rejected := strings.TrimSuffix(first.Branch, "-1") + "-7"
	f.git("checkout", "-q", "-b", rejected, "main")
	f.stopOnMain(promotion.Rejected)
	f.git("checkout", "-q", "main")
	_, errNone := AttemptBranch(ctx, f.repo, "", "checkout", "production")
	if exitcode.Code(errNone) != exitcode.Usage {
		t.Fatalf("no open attempt: %v, want a usage error saying none is open", errNone)
	}
	errorLines(t, "testdata/no-open-attempt.golden", 1)("finished attempts only", errNone) // none open, not "several"
	f.stopOnMain(promotion.Halted)
	second := f.approved(now) // verify and approve without --branch pick it
	if b, err := AttemptBranch(ctx, f.repo, "", "checkout", "production"); err != nil || b != second.Branch {
		t.Fatalf("picked %q %v, want %s", b, err, second.Branch)
	}
}

// TestRollbackAfterReject: a REJECTED rollback attempt never blocks the
// next rollback to the same digest: it opens attempt n+1 on a new branch.
func TestRollbackAfterReject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, _ := newRollbackFixture(t)
	req := RollbackRequest{App: "web", Env: "production", To: ledger.Previous, Path: webOverlay, Renderer: renderer,
		Exists: func(context.Context, string) (bool, error) { return true, nil }}
	first, err := Rollback(ctx, f.repo, req)
	must(t, err)
	_, err = Reject(ctx, f.repo, RejectRequest{App: "web", To: "production", Reason: "not now", By: "bob", Now: time.Now()})
	must(t, err)
	second, err := Rollback(ctx, f.repo, req)
	must(t, err)
	p1, p2 := first.Proposal, second.Proposal
	if p2.Existing || p2.Record.Attempt != p1.Record.Attempt+1 || p2.Branch == p1.Branch || p2.Record.Artifact.Digest != digestA ||
		!p2.Record.VerifiedIn.IsPriorAcceptance() {
		t.Fatalf("rollback after the reject: %s existing=%v on %s, want attempt %d of %s on a new branch", p2.Record.PromotionID, p2.Existing,
			p2.Branch, p1.Record.Attempt+1, digestA)
	}
}
