package promote

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/promotion"
)

// commitAs commits change on branch as git would for signer (nil:
// unsigned), authored by author.
func (f *fixture) commitAs(branch string, signer *sshkey.Key, author string, change func()) {
	f.t.Helper()
	f.git("checkout", "-q", branch)
	change()
	f.commitSigned(signer, "change", "GIT_AUTHOR_NAME="+author, "GIT_AUTHOR_EMAIL="+author, "GIT_COMMITTER_NAME="+author, "GIT_COMMITTER_EMAIL="+author)
	f.git("checkout", "-q", "main")
}

// policyPR is a branch that gives production a reconcile deadline (a
// change to what judges it), written by dave, whose key signs it.
func policyPR(f *fixture, dave sshkey.Key) string {
	f.t.Helper()
	f.git("branch", "deadline", "main")
	f.commitAs("deadline", &dave, "dave@example.com", func() {
		p := f.read(promotion.PolicyFile)
		f.write(map[string]string{promotion.PolicyFile: strings.Replace(p, "    protected: true\n", "    protected: true\n    reconcileDeadline: 45m\n", 1)})
	})
	return "deadline"
}

func (f *fixture) approvePolicy(k sshkey.Key, branch string) (*PolicyApproval, error) {
	now := time.Now()
	return ApprovePolicy(context.Background(), f.as(k), PolicyApproveRequest{Environment: "production", Branch: branch, Expires: now.Add(time.Hour), Now: now})
}

func (f *fixture) checkRepo(head string, now time.Time) *gate.RepositoryReport {
	f.t.Helper()
	rep, err := gate.CheckRepository(context.Background(), f.repo, gate.Request{Base: "main", Head: head, Now: now, Renderer: renderer})
	must(f.t, err)
	return rep
}

func repoRules(rep *gate.RepositoryReport) string {
	var out []string
	for _, f := range rep.Findings {
		if !slices.Contains(out, f.Rule) {
			out = append(out, f.Rule)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// TestPolicyApproval: a change to what judges production passes the
// every-PR check only with minApprovals (2) signed approvals of exactly
// that change by production's approvers who did not write it, unexpired.
func TestPolicyApproval(t *testing.T) {
	t.Parallel()
	f, k := signedFixture(t, "2")
	f.write(map[string]string{"allowed-signers": sshkey.Signers(k.alice, k.bob, k.carol, k.dave)})
	f.commit("dave's key")
	pr := policyPR(f, k.dave)
	if rep := f.checkRepo(pr, time.Now()); rep.OK || repoRules(rep) != gate.RuleApprovalCount+" "+gate.RuleJudges {
		t.Fatalf("unapproved: %s: %q", repoRules(rep), rep.Refusals)
	}
	a, err := f.approvePolicy(k.alice, pr)
	must(t, err)
	if len(a.Document.Approvals) != 1 || !slices.Contains(a.Document.Changes,
		`throughline-policy.yaml environments.production.reconcileDeadline: (none) -> "45m0s"`) {
		t.Fatalf("approval document %+v", a.Document)
	}
	if rep := f.checkRepo(pr, time.Now()); rep.OK || !strings.Contains(strings.Join(rep.Refusals, "\n"), "1 valid approval(s) of this change; production needs 2") {
		t.Fatalf("one of two approvals: %q", rep.Refusals)
	}
	if _, err := f.approvePolicy(k.alice, pr); !isRefusal(err, gate.RuleApprovalCommit) {
		t.Fatalf("alice approves twice: %v", err)
	}
	_, err = f.approvePolicy(k.bob, pr)
	must(t, err)
	rep := f.checkRepo(pr, time.Now())
	if !rep.OK || len(rep.Judges) != 1 || rep.Judges[0].Approved != 2 {
		t.Fatalf("approved by alice and bob: %q %+v", rep.Refusals, rep.Judges)
	}
	// An hour later both approvals have expired.
	if rep := f.checkRepo(pr, time.Now().Add(2*time.Hour)); rep.OK || !strings.Contains(repoRules(rep), gate.RuleApprovalExpired) {
		t.Fatalf("expired approvals: %s %q", repoRules(rep), rep.Refusals)
	}
	// Another change after the approvals: they approved another change.
	f.commitAs(pr, &k.dave, "dave@example.com", func() {
		f.write(map[string]string{promotion.PolicyFile: strings.Replace(f.read(promotion.PolicyFile), "minApprovals: 2", "minApprovals: 1", 1)})
	})
	if rep := f.checkRepo(pr, time.Now()); rep.OK || !strings.Contains(strings.Join(rep.Refusals, "\n"), "no approval of this change") {
		t.Fatalf("approvals of the earlier change count: %q", rep.Refusals)
	}
}

// TestPolicyApprovalAttacks: approvals that must not count.
func TestPolicyApprovalAttacks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// attack writes on the PR branch after the change; it returns the
		// rule the gate must name, and ApprovePolicy's refusal when the
		// attack goes through it.
		attack func(f *fixture, k keys, pr string) error
		rule   string
	}{
		{"the writer of the change approves it", func(f *fixture, k keys, pr string) error {
			f.commitAs(pr, &k.alice, "alice@example.com", func() { // alice touches the change up
				f.write(map[string]string{"README.md": "touched\n"})
			})
			if _, err := f.approvePolicy(k.alice, pr); !isRefusal(err, gate.RuleFourEyes) {
				return fmt.Errorf("alice approves her own change: %w", err)
			}
			f.handPolicyApproval(pr, &k.alice, "alice@example.com", nil)
			return nil
		}, gate.RuleFourEyes},
		{"an unsigned approval", func(f *fixture, k keys, pr string) error {
			f.handPolicyApproval(pr, nil, "alice@example.com", nil)
			return nil
		}, gate.RuleApprovalSignature},
		{"bob's approval signed by eve's key", func(f *fixture, k keys, pr string) error {
			f.handPolicyApproval(pr, &k.eve, "bob@example.com", nil)
			return nil
		}, gate.RuleApprovalSignature},
		{"carol approves (not production's approver)", func(f *fixture, k keys, pr string) error {
			if _, err := f.approvePolicy(k.carol, pr); !isRefusal(err, gate.RuleApprover) {
				return fmt.Errorf("carol approves: %w", err)
			}
			f.handPolicyApproval(pr, &k.carol, "carol@example.com", nil)
			return nil
		}, gate.RuleApprover},
		{"eve adds her key in the pull request and approves", func(f *fixture, k keys, pr string) error {
			f.commitAs(pr, nil, "eve@example.com", func() {
				f.write(map[string]string{"allowed-signers": sshkey.Signers(k.alice, k.bob, k.carol, k.eve) + "alice@example.com " + k.eve.Public + "\n"})
			})
			f.handPolicyApproval(pr, &k.eve, "alice@example.com", nil)
			return nil
		}, gate.RuleApprovalSignature},
		{"dave's key, listed for alice too, approves dave's change as alice", func(f *fixture, k keys, pr string) error {
			f.write(map[string]string{"allowed-signers": f.read("allowed-signers") + "alice@example.com " + k.dave.Public + "\n"})
			f.commit("alice's second key") // on main: the base lists it
			f.handPolicyApproval(pr, &k.dave, "alice@example.com", nil)
			return nil
		}, gate.RuleFourEyes},
		{"an approval commit that changes another file", func(f *fixture, k keys, pr string) error {
			f.handPolicyApproval(pr, &k.alice, "alice@example.com", func() { f.write(map[string]string{"README.md": "and this\n"}) })
			return nil
		}, gate.RuleApprovalCommit},
		{"an approval commit that changes the policy again", func(f *fixture, k keys, pr string) error {
			f.handPolicyApproval(pr, &k.alice, "alice@example.com", func() {
				f.write(map[string]string{promotion.PolicyFile: strings.Replace(f.read(promotion.PolicyFile), "reconcileDeadline: 45m", "reconcileDeadline: 50m", 1)})
			})
			return nil
		}, gate.RuleApprovalCount},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, k := signedFixture(t, "1")
			f.write(map[string]string{"allowed-signers": sshkey.Signers(k.alice, k.bob, k.carol, k.dave)})
			f.commit("dave's key")
			pr := policyPR(f, k.dave)
			if err := tc.attack(f, k, pr); err != nil {
				t.Fatal(err)
			}
			rep := f.checkRepo(pr, time.Now())
			if rep.OK || !strings.Contains(repoRules(rep), tc.rule) || !strings.Contains(repoRules(rep), gate.RuleJudges) {
				t.Fatalf("rules %s, want %s: %q", repoRules(rep), tc.rule, rep.Refusals)
			}
		})
	}
}

// handPolicyApproval commits on branch, as git itself would for signer
// (nil: unsigned), production's policy approval of the branch's current
// change with an approval naming approver (edit may change more).
func (f *fixture) handPolicyApproval(branch string, signer *sshkey.Key, approver string, edit func()) {
	f.t.Helper()
	d, err := gate.JudgesChange(context.Background(), f.repo, "main", branch, "production")
	must(f.t, err)
	now := time.Now()
	doc := &promotion.PolicyApproval{APIVersion: "throughline.dev/v1alpha1", Kind: promotion.PolicyApprovalKind, Environment: "production",
		Change: d.Change, Changes: d.Words(), Approvals: []promotion.Approval{{Approver: approver, InputHash: d.Change,
			ApprovedAt: now, ExpiresAt: now.Add(time.Hour)}}}
	data, err := doc.Marshal()
	must(f.t, err)
	f.commitAs(branch, signer, "t@example.invalid", func() {
		f.write(map[string]string{promotion.PolicyApprovalPath("production"): string(data)})
		if edit != nil {
			edit()
		}
	})
}
