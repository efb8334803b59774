package promote

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/gittest"
	"github.com/throughline-dev/throughline/internal/sshkey"
	"github.com/throughline-dev/throughline/promotion"
)

// signedPolicy is a registry whose production needs minApprovals signed
// approvals of alice or bob, and whose staging is carol's.
func signedPolicy(minApprovals string) string {
	return `apiVersion: throughline.dev/v1alpha1
kind: PromotionPolicy
allowedSigners: allowed-signers
evidenceSigners: .throughline/evidence-signers
environments:
  dev:
    cluster: dev-eu-1
    paths: ["apps/*/overlays/dev"]
  staging:
    cluster: staging-eu-1
    paths: ["apps/*/overlays/staging"]
    approvers: [carol@example.com]
  production:
    cluster: prod-eu-1
    paths: ["apps/*/overlays/production"]
    protected: true
    approvers: [alice@example.com, bob@example.com]
    minApprovals: ` + minApprovals + "\n"
}

// keys are the test's signers: alice and bob approve production, carol
// staging; eve's key is in no allowed-signers file; dave's is listed where
// a test adds it (he proposes).
type keys struct{ alice, bob, carol, eve, dave sshkey.Key }

// signedFixture is the fixture with production's approvers and the
// allowed-signers file on main.
func signedFixture(t *testing.T, minApprovals string) (*fixture, keys) {
	t.Helper()
	f := newFixture(t)
	k := keys{sshkey.New(t, "alice@example.com"), sshkey.New(t, "bob@example.com"), sshkey.New(t, "carol@example.com"), sshkey.New(t, "eve@example.com"),
		sshkey.New(t, "dave@example.com")}
	f.write(map[string]string{promotion.PolicyFile: signedPolicy(minApprovals), "allowed-signers": sshkey.Signers(k.alice, k.bob, k.carol)})
	f.commit("approvers and their keys")
	return f, k
}

// as is the repository as k's owner uses it: git signs with k.
func (f *fixture) as(k sshkey.Key) *gitops.Repo {
	g := *f.repo.Repo
	g.Env = append(append([]string(nil), g.Env...), k.Env()...)
	return &gitops.Repo{Repo: &g, Base: f.repo.Base, Charts: f.repo.Charts}
}

// verified proposes (signed by proposer when given) and verifies the
// production attempt.
func (f *fixture) verified(proposer *sshkey.Key) *Proposal {
	f.t.Helper()
	repo := f.repo
	if proposer != nil {
		repo = &gitops.Repo{Repo: f.as(*proposer).Signing(), Base: f.repo.Base}
	}
	p, err := Propose(context.Background(), repo, ProposeRequest{App: "checkout", From: "staging", To: "production", Path: production, Renderer: renderer})
	must(f.t, err)
	_, err = Verify(context.Background(), f.repo, VerifyRequest{App: "checkout", To: "production", Now: time.Now()})
	must(f.t, err)
	return p
}

func (f *fixture) approve(k sshkey.Key) (*Transition, error) {
	now := time.Now()
	return Approve(context.Background(), f.as(k), ApproveRequest{App: "checkout", To: "production", Expires: now.Add(2 * time.Hour), Now: now, Renderer: renderer})
}

// handApproval commits on branch, as git itself would for signer (nil:
// unsigned), the record with an approval naming approver added by hand
// (edit may change more).
func (f *fixture) handApproval(branch string, signer *sshkey.Key, approver string, edit func()) {
	f.t.Helper()
	f.git("checkout", "-q", branch)
	file := promotion.RecordPath("checkout", "production")
	rec, err := promotion.Parse(file, []byte(f.read(file)))
	must(f.t, err)
	now := time.Now()
	in := rec.InputFor(renderer)
	must(f.t, rec.AddApproval(approver, in, now.Add(time.Hour), now, 1))
	data, err := rec.Marshal()
	must(f.t, err)
	f.write(map[string]string{file: string(data)})
	if edit != nil {
		edit()
	}
	f.commitSigned(signer, "approve")
	f.git("checkout", "-q", "main")
}

// commitSigned stages everything and commits it with msg as git itself
// would for signer (nil: unsigned), extra (an author) added to gittest's
// environment before the signer's. The one exec of git outside gittest:
// gittest.Run runs git in gittest.Env(dir) with nothing added, and a
// signed commit needs the signer's key and identity in the environment.
func (f *fixture) commitSigned(signer *sshkey.Key, msg string, extra ...string) {
	f.t.Helper()
	f.git("add", "-A")
	args := []string{"commit", "-q", "--allow-empty", "-m", msg, "--no-gpg-sign"}
	if signer != nil {
		args[len(args)-1] = "-S"
		extra = append(extra, signer.Env()...)
	}
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = f.top, gittest.Env(f.top, extra...)
	if out, err := cmd.CombinedOutput(); err != nil {
		f.t.Fatalf("git commit: %v: %s", err, out)
	}
}

// unsignedApprovals drops the example's production approvers (tests of
// other gates approve unsigned, as before approvals were signed).
func (f *fixture) unsignedApprovals() {
	f.t.Helper()
	f.write(map[string]string{promotion.PolicyFile: withoutApprovers(f.read(promotion.PolicyFile))})
	f.commit("unsigned approvals")
}

// withoutApprovers is policy without approvers and minApprovals lines.
func withoutApprovers(policy string) string {
	var keep []string
	for _, l := range strings.SplitAfter(policy, "\n") {
		if t := strings.TrimSpace(l); !strings.HasPrefix(t, "approvers:") && !strings.HasPrefix(t, "minApprovals:") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// TestSignedApprovalAttacks: each attack on the four-eyes rule is refused
// by promote check (and by promote approve where it goes through it).
// Every case passed the gate before approvals were signed.
func TestSignedApprovalAttacks(t *testing.T) {
	t.Parallel()
	record := errorLines(t, "testdata/signed-approval-attacks.golden", 1)
	for _, tc := range []struct {
		name, min string
		attack    func(f *fixture, k keys, p *Proposal)
		rules     []string
		want      string
	}{
		{"unsigned approval", "1", func(f *fixture, k keys, p *Proposal) {
			f.handApproval(p.Branch, nil, "alice@example.com", nil)
		}, []string{gate.RuleApprovalSignature}, "the commit is not signed"},
		{"an unsigned approval the old way (approval without approvals)", "1", func(f *fixture, k keys, p *Proposal) {
			file := promotion.RecordPath("checkout", "production")
			f.amend(p.Branch, func() {
				rec, err := promotion.Parse(file, []byte(f.read(file)))
				must(t, err)
				must(t, rec.Approve("alice@example.com", rec.InputFor(renderer), time.Now().Add(time.Hour), time.Now()))
				data, err := rec.Marshal()
				must(t, err)
				f.write(map[string]string{file: string(data)})
			})
		}, []string{gate.RuleApprovalCount}, "0 of the 1 signed approvals production needs"},
		{"key not in the allowed-signers file", "1", func(f *fixture, k keys, p *Proposal) {
			f.handApproval(p.Branch, &k.eve, "alice@example.com", nil)
		}, []string{gate.RuleApprovalSignature}, "is not in the allowed-signers file"},
		{"staging approver approves production", "1", func(f *fixture, k keys, p *Proposal) {
			if _, err := f.approve(k.carol); !isRefusal(err, gate.RuleApprover) {
				t.Fatalf("approve as carol: %v", err)
			}
			f.handApproval(p.Branch, &k.carol, "carol@example.com", nil)
		}, []string{gate.RuleApprover}, "carol@example.com is not an approver of production"},
		{"signed by one approver, naming another", "1", func(f *fixture, k keys, p *Proposal) {
			f.handApproval(p.Branch, &k.bob, "alice@example.com", nil)
		}, []string{gate.RuleApprovalSignature}, "is signed by bob@example.com, not by the approver it names"},
		{"one approver twice for minApprovals 2", "2", func(f *fixture, k keys, p *Proposal) {
			_, err := f.approve(k.alice)
			must(t, err)
			_, err = f.approve(k.alice)
			var te *promotion.TransitionError
			if refusedBy(t, err, RuleTransition); !errors.As(err, &te) || te.From != promotion.Verified || te.To != promotion.Approved {
				t.Fatalf("alice again: %v, want a transition error VERIFIED -> APPROVED", err)
			}
			record("alice approves twice", err) // "already approved"
			f.handApproval(p.Branch, &k.alice, "bob@example.com", nil)
		}, []string{gate.RuleApprovalSignature}, "signed by alice@example.com, not by the approver it names"},
		{"a PR adds its own key and approves with it", "1", func(f *fixture, k keys, p *Proposal) {
			f.handApproval(p.Branch, &k.eve, "bob@example.com", func() {
				f.write(map[string]string{"allowed-signers": f.read("allowed-signers") + "bob@example.com " + k.eve.Public + "\n"})
			})
		}, []string{gate.RuleApprovalSignature, gate.RuleFile}, "is not in the allowed-signers file"},
		{"an approval edited by hand after a signed one", "2", func(f *fixture, k keys, p *Proposal) {
			_, err := f.approve(k.alice)
			must(t, err)
			f.handApproval(p.Branch, nil, "bob@example.com", nil)
		}, []string{gate.RuleApprovalSignature}, "approvals[1] by bob@example.com: commit"},
		{"a signed approval commit that changes the overlay", "1", func(f *fixture, k keys, p *Proposal) {
			kfile := production + "/kustomization.yaml"
			f.handApproval(p.Branch, &k.alice, "alice@example.com", func() {
				f.write(map[string]string{kfile: f.read(kfile) + "# reviewed\n"})
			})
		}, []string{gate.RuleApprovalCommit}, "an approval commit changes only the record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, k := signedFixture(t, tc.min)
			p := f.verified(nil)
			tc.attack(f, k, p)
			rep := f.check(p.Branch, time.Now())
			got := strings.Join(rules(rep), " ")
			for _, r := range tc.rules {
				if !strings.Contains(" "+got+" ", " "+r+" ") {
					t.Errorf("rules %s, want %s", got, r)
				}
			}
			if rep.OK || !strings.Contains(strings.Join(rep.Refusals, "\n"), tc.want) {
				t.Errorf("refusals do not say %q:\n%s", tc.want, strings.Join(rep.Refusals, "\n"))
			}
		})
	}
}

// TestProposerCannotApprove: who signed the proposal (or wrote it, by its
// author) cannot approve it, by promote approve or by hand.
func TestProposerCannotApprove(t *testing.T) {
	t.Parallel()
	record := errorLines(t, "testdata/proposer-cannot-approve.golden", 2)
	f, k := signedFixture(t, "1")
	p := f.verified(&k.alice)
	_, err := f.approve(k.alice)
	refusedBy(t, err, gate.RuleFourEyes)
	record("the signer of the proposal approves", err)
	f.handApproval(p.Branch, &k.alice, "alice@example.com", nil)
	rep := f.check(p.Branch, time.Now())
	if rep.OK || strings.Join(rules(rep), " ") != gate.RuleApprovalCount+" "+gate.RuleFourEyes {
		t.Fatalf("rules %v: %q", rules(rep), rep.Refusals)
	}
	// An unsigned proposal whose author is bob: bob cannot approve it.
	f, k = signedFixture(t, "1")
	p = f.verified(nil)
	f.git("checkout", "-q", p.Branch)
	f.git("commit", "-q", "--allow-empty", "-m", "touch up", "--author", "Bob <bob@example.com>")
	f.git("checkout", "-q", "main")
	_, err = f.approve(k.bob)
	refusedBy(t, err, gate.RuleFourEyes)
	record("the author of the proposal approves", err)
}

// TestSignedApprovals: two distinct approvers sign for minApprovals 2; the
// record is APPROVED after the second and the gate passes.
func TestSignedApprovals(t *testing.T) {
	t.Parallel()
	f, k := signedFixture(t, "2")
	p := f.verified(nil)
	tr, err := f.approve(k.alice)
	must(t, err)
	if tr.Record.State != promotion.Verified || len(tr.Record.Approvals) != 1 {
		t.Fatalf("one of two: %+v", tr.Record)
	}
	if rep := f.check(p.Branch, time.Now()); rep.OK || strings.Join(rules(rep), " ") != gate.RuleApprovalCount+" "+gate.RuleNotApproved {
		t.Fatalf("one of two approvals: %v %q", rules(rep), rep.Refusals)
	}
	if _, err := Approve(context.Background(), f.as(k.bob), ApproveRequest{App: "checkout", To: "production", Approver: "alice@example.com",
		Expires: time.Now().Add(time.Hour), Now: time.Now(), Renderer: renderer}); !isRefusal(err, gate.RuleApprovalSignature) {
		t.Fatalf("--approver alice with bob's key: %v", err)
	}
	tr, err = f.approve(k.bob)
	must(t, err)
	if tr.Record.State != promotion.Approved || tr.Record.Approval.Approver != "alice@example.com, bob@example.com" {
		t.Fatalf("approved: %+v", tr.Record)
	}
	if rep := f.check(p.Branch, time.Now()); !rep.OK {
		t.Fatalf("two signed approvals: %q", rep.Refusals)
	}
	if _, err := f.approve(k.eve); !isRefusal(err, gate.RuleApprovalSignature) {
		t.Fatalf("eve's key: %v", err)
	}
}

// TestAllowedSignersInvalid: a missing or malformed allowed-signers file
// at the base is invalid input naming the file (and the line).
func TestAllowedSignersInvalid(t *testing.T) {
	t.Parallel()
	// The wording (the line, the policy's field) is in the golden file.
	record := errorLines(t, "testdata/allowed-signers-invalid.golden", 4)
	for _, tc := range []struct{ name, content string }{
		{"malformed", "# keys\nalice@example.com ssh-ed25519 !!!\n"},
		{"missing", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, k := signedFixture(t, "1")
			p := f.verified(nil)
			if tc.content == "" {
				f.git("rm", "-q", "gitops/allowed-signers")
			} else {
				f.write(map[string]string{"allowed-signers": tc.content})
			}
			f.commit("break the allowed signers")
			_, err := f.approve(k.alice)
			invalidFile(t, err, "allowed-signers")
			record(tc.name+", approve", err)
			_, err = gate.CheckPromotion(context.Background(), f.repo, gate.Request{Base: "main", Head: p.Branch, Now: time.Now(), Renderer: renderer})
			invalidFile(t, err, "allowed-signers")
			record(tc.name+", check", err)
		})
	}
}

// TestReject: promote reject moves the open attempt to REJECTED with the
// reason; the gate refuses it; an approval of a branch that renders
// something else rejects the attempt.
func TestReject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	p := f.propose()
	tr, err := Reject(ctx, f.repo, RejectRequest{App: "checkout", To: "production", Reason: "wrong release", By: "bob", Now: time.Now()})
	must(t, err)
	if tr.Record.State != promotion.Rejected || tr.Record.Reason != "wrong release" || tr.Commit != f.git("rev-parse", p.Branch) {
		t.Fatalf("rejected %+v", tr)
	}
	if rep := f.check(p.Branch, time.Now()); rep.OK || !strings.Contains(strings.Join(rules(rep), " "), gate.RuleStopped) {
		t.Fatalf("check of a rejected record: %v", rules(rep))
	}
	// A REJECTED attempt is finished: not picked without --branch, and
	// final when named.
	if _, err := Reject(ctx, f.repo, RejectRequest{App: "checkout", To: "production", Reason: "again", Now: time.Now()}); exitcode.Code(err) != exitcode.Usage {
		t.Fatalf("reject twice without --branch: %v, want no open attempt", err)
	}
	if _, err := Reject(ctx, f.repo, RejectRequest{App: "checkout", To: "production", Branch: p.Branch, Reason: "again", Now: time.Now()}); !isRefusal(err, RuleTransition) {
		t.Fatalf("reject twice: %v", err)
	}
	if _, err := Reject(ctx, f.repo, RejectRequest{App: "checkout", To: "production", Now: time.Now()}); exitcode.Code(err) != exitcode.Usage {
		t.Fatalf("no reason: %v", err)
	}

	f = newFixture(t)
	f.unsignedApprovals()
	p = f.verified(nil)
	kfile := production + "/kustomization.yaml"
	f.amend(p.Branch, func() { f.write(map[string]string{kfile: strings.Replace(f.read(kfile), "count: 6", "count: 8", 1)}) })
	now := time.Now()
	_, err = Approve(ctx, f.repo, ApproveRequest{App: "checkout", To: "production", Approver: "alice", Expires: now.Add(time.Hour), Now: now, Renderer: renderer})
	refusedBy(t, err, RuleApproval)
	errorLines(t, "testdata/reject.golden", 1)("approve of a changed render", err) // "the record is now REJECTED"
	rec, err := promotion.ReadRecord(ctx, f.repo, p.Branch, "checkout", "production")
	must(t, err)
	if rec.State != promotion.Rejected || !strings.Contains(rec.Reason, "approve refused: the attempt branch renders") {
		t.Fatalf("record %s: %s", rec.State, rec.Reason)
	}
}

func isRefusal(err error, rule string) bool {
	var re *exitcode.Refusal
	return errors.As(err, &re) && re.Rule == rule
}
