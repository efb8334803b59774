package promote

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
)

// approvedAttempt proposes, verifies and approves the production attempt
// and returns its branch.
func (f *fixture) approvedAttempt() string {
	f.t.Helper()
	ctx, now := context.Background(), time.Now()
	f.unsignedApprovals()
	p := f.propose()
	_, err := Verify(ctx, f.repo, VerifyRequest{App: "checkout", To: "production", Now: now})
	must(f.t, err)
	_, err = Approve(ctx, f.repo, ApproveRequest{App: "checkout", To: "production", Approver: "alice", Expires: now.Add(2 * time.Hour),
		Now: now, Renderer: renderer})
	must(f.t, err)
	return p.Branch
}

// TestStatusMergedAttempts: once the attempt branch is merged into the
// base branch (a merge commit, or squashed so that only its record
// reaches the base) and reconciled, status no longer lists it as open;
// --all still lists it, saying merged. A branch not merged yet stays open.
func TestStatusMergedAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		merge func(f *fixture, branch string)
		want  ledger.BranchState
	}{
		{"not merged", func(*fixture, string) {}, ledger.BranchOpen},
		{"merge commit", func(f *fixture, b string) { f.git("merge", "-q", "--no-ff", "--no-edit", b) }, ledger.BranchMerged},
		{"squashed", func(f *fixture, b string) {
			f.git("merge", "-q", "--squash", b)
			f.git("commit", "-q", "-m", "squashed "+b)
		}, ledger.BranchMerged},
		{"rejected on its branch", func(f *fixture, b string) {
			f.amend(b, func() {
				file := promotion.RecordPath("checkout", "production")
				rec, err := promotion.Parse(file, []byte(f.read(file)))
				must(f.t, err)
				must(f.t, rec.Stop(promotion.Rejected, "not this week", time.Now(), "bob"))
				data, err := rec.Marshal()
				must(f.t, err)
				f.write(map[string]string{file: string(data)})
			})
		}, ledger.BranchClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			branch := f.approvedAttempt()
			tc.merge(f, branch)
			if tc.want == ledger.BranchMerged {
				tip := f.git("rev-parse", branch)
				tr, _, err := Reconcile(ctx, f.repo, ReconcileRequest{App: "checkout", To: "production", Now: time.Now(), By: "test", Renderer: renderer})
				must(t, err)
				if len(tr.Closed) != 1 || tr.Closed[0] != branch {
					t.Fatalf("reconcile deleted %v, want the merged %s", tr.Closed, branch)
				}
				f.git("branch", branch, tip) // left behind where reconcile cannot delete it
			}
			rows, err := ledger.Status(ctx, f.repo, "")
			must(t, err)
			var open []string
			for _, r := range rows {
				if r.Ref == branch {
					open = append(open, string(r.State)+" "+string(r.Branch))
				}
			}
			if wantOpen := tc.want == ledger.BranchOpen; (len(open) == 1) != wantOpen {
				t.Fatalf("status lists the attempt branch %v, want open=%v: %+v", open, wantOpen, rows)
			}
			all, err := ledger.StatusAll(ctx, f.repo, "")
			must(t, err)
			var got []string
			for _, r := range all {
				if r.Ref == branch {
					got = append(got, string(r.Branch))
					if r.Branch == ledger.BranchMerged && !strings.Contains(r.Why, "main") {
						t.Errorf("merged row does not say where: %+v", r)
					}
				}
				if r.Ref == "main" && r.Branch != ledger.BranchBase {
					t.Errorf("base row %+v", r)
				}
			}
			if len(got) != 1 || got[0] != string(tc.want) {
				t.Fatalf("status --all rows of %s: %v, want [%s]: %+v", branch, got, tc.want, all)
			}
			if tc.want == ledger.BranchMerged {
				var states []string
				for _, r := range rows {
					states = append(states, r.Environment+"="+string(r.State)+"@"+r.Ref)
				}
				if strings.Join(states, " ") != "production="+string(promotion.Reconciling)+"@main staging=ACCEPTED@main" {
					t.Fatalf("open status %v", states)
				}
			}
		})
	}
}
