package promotion

import (
	"errors"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/internal/golden"
)

// TestAddApproval: two distinct approvers for minApprovals 2, the second
// signature moving the record to APPROVED; the same approver twice, an
// approval of another render and of a CANDIDATE refused.
func TestAddApproval(t *testing.T) {
	t.Parallel()
	r := candidate(t)
	in := r.InputFor("v0.1.0")
	record := golden.ErrorLines(t, "testdata/add-approval.golden", 2)
	var te *TransitionError
	err := r.AddApproval("alice@example.com", in, t0.Add(time.Hour), t0, 2)
	if !errors.As(err, &te) || te.From != Candidate || te.To != Approved {
		t.Fatalf("approval of a candidate: %v", err)
	}
	record("approval of a candidate", err)
	must(t, r.Verify(evidence(), t0.Add(time.Minute), "notifier"))
	must(t, r.AddApproval("alice@example.com", in, t0.Add(3*time.Hour), t0.Add(2*time.Minute), 2))
	if r.State != Verified || len(r.Approvals) != 1 || r.Approval != nil {
		t.Fatalf("one of two approvals: %s %+v", r.State, r.Approvals)
	}
	err = r.AddApproval("alice@example.com", in, t0.Add(3*time.Hour), t0.Add(3*time.Minute), 2)
	if !errors.As(err, &te) || te.From != Verified || te.To != Approved || r.State != Verified || len(r.Approvals) != 1 {
		t.Fatalf("the same approver twice: %v", err)
	}
	record("the same approver twice", err)
	other := in
	other.RenderedHash = hashB
	if err := r.AddApproval("bob@example.com", other, t0.Add(3*time.Hour), t0.Add(3*time.Minute), 2); !errors.As(err, &te) {
		t.Fatalf("approval of another render: %v", err)
	}
	must(t, r.AddApproval("bob@example.com", in, t0.Add(2*time.Hour), t0.Add(3*time.Minute), 2))
	if r.State != Approved || r.Approval.Approver != "alice@example.com, bob@example.com" || !r.Approval.ExpiresAt.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("approved: %s %+v", r.State, r.Approval)
	}
	now := in
	if why := r.ApprovalVoid(now, "", t0.Add(time.Hour)); why != "" {
		t.Fatalf("void: %s", why)
	}
	data, err := r.Marshal()
	must(t, err)
	back, err := Parse("x.yaml", data)
	must(t, err)
	must(t, CheckUpdate(r, back))
}

// TestApprovalsHandEdited: a record whose approvals were edited by hand is
// refused by Validate and CheckUpdate.
func TestApprovalsHandEdited(t *testing.T) {
	t.Parallel()
	base := candidate(t)
	must(t, base.Verify(evidence(), t0.Add(time.Minute), "notifier"))
	must(t, base.AddApproval("alice@example.com", base.InputFor("v0.1.0"), t0.Add(3*time.Hour), t0.Add(2*time.Minute), 2))
	for _, tc := range []struct {
		name, field string
		edit        func(t *testing.T, r *Record)
	}{
		{"later expiry", "approvals[0].inputHash", func(_ *testing.T, r *Record) { r.Approvals[0].ExpiresAt = t0.Add(300 * time.Hour) }},
		{"twice", "approvals[1].approver", func(_ *testing.T, r *Record) { r.Approvals = append(r.Approvals, r.Approvals[0]) }},
		{"summary of others", "approval", func(t *testing.T, r *Record) {
			must(t, r.AddApproval("bob@example.com", r.InputFor("v0.1.0"), t0.Add(3*time.Hour), t0.Add(3*time.Minute), 2))
			r.Approval.Approver = "bob@example.com"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := base.clone()
			tc.edit(t, r)
			var re *RecordError
			if err := r.Validate(); !errors.As(err, &re) || re.Field != tc.field {
				t.Fatalf("%v, want field %s", err, tc.field)
			}
		})
	}
	// CheckUpdate's refusals are transitions of the record to itself; what
	// was changed is in each message (the golden file).
	record := golden.ErrorLines(t, "testdata/approvals-hand-edited.golden", 2)
	r := base.clone()
	r.Approvals[0].ApprovedAt = r.Approvals[0].ApprovedAt.Add(time.Second)
	err := CheckUpdate(base, r)
	var te *TransitionError
	if !errors.As(err, &te) || te.From != Verified || te.To != Verified {
		t.Fatalf("rewritten approval: %v", err)
	}
	record("rewritten approval", err)
	r = base.clone()
	r.Approvals = nil
	err = CheckUpdate(base, r)
	if !errors.As(err, &te) || te.From != Verified || te.To != Verified {
		t.Fatalf("removed approval: %v", err)
	}
	record("removed approval", err)
}

// TestReject: REJECTED from any open state with the reason, never from a
// final one.
func TestReject(t *testing.T) {
	t.Parallel()
	r := candidate(t)
	must(t, r.Verify(evidence(), t0.Add(time.Minute), "notifier"))
	must(t, r.Stop(Rejected, "the render changed", t0.Add(2*time.Minute), "bob@example.com"))
	if r.State != Rejected || r.Reason != "the render changed" || r.History[2].By != "bob@example.com" {
		t.Fatalf("%+v", r)
	}
	if err := r.Stop(Rejected, "again", t0.Add(3*time.Minute), "x"); err == nil {
		t.Fatal("a REJECTED record rejected again")
	}
	if err := accepted(t).Stop(Rejected, "late", t0.Add(time.Hour), "x"); err == nil {
		t.Fatal("an ACCEPTED record rejected")
	}
}
