package gate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/promotion"
)

// Rules of signed approvals (environments whose registry entry lists
// approvers).
const (
	// RuleApprovalSignature: an approval is not written by a commit
	// SSH-signed with a key of the allowed-signers file (at the base) for
	// the approver it names.
	RuleApprovalSignature = "approval-signature"
	// RuleApprover: the signer is not an approver of the target
	// environment (in the base revision's registry).
	RuleApprover = "approver"
	// RuleFourEyes: the signer proposed the promotion.
	RuleFourEyes = "four-eyes"
	// RuleApprovalCommit: an approval commit writes more than its one
	// approval.
	RuleApprovalCommit = "approval-commit"
	// RuleApprovalCount: fewer distinct approvers signed than the
	// environment's minApprovals.
	RuleApprovalCount = "approval-count"
)

// Approvers is who approves in one environment, as the base revision says:
// the registry entry and the allowed-signers file. A PR cannot add its own
// approver or key: both are read at the base.
type Approvers struct {
	env *environment.Environment
	// file is the allowed-signers file (policy allowedSigners), signers
	// its content at the base.
	file    string
	signers []byte
}

// Required is how many distinct approvers must sign (0: approvals are not
// signed in this environment, the unsigned approval of old holds).
func (a *Approvers) Required() int {
	if a.env == nil {
		return 0
	}
	return a.env.RequiredApprovals()
}

// ReadApprovers reads env's approvers and the allowed-signers file at
// base. An environment without approvers (or an empty registry) needs no
// signature. A missing, unreadable or malformed allowed-signers file is
// invalid input (exit 4) naming the file and the line.
func ReadApprovers(ctx context.Context, r *gitops.Repo, base, env string) (*Approvers, error) {
	pol, err := promotion.ReadPolicy(ctx, r, base)
	if err != nil {
		return nil, err
	}
	reg, err := promotion.Registry(pol)
	if err != nil {
		return nil, err
	}
	e, ok := reg.Get(env)
	if !ok || e.RequiredApprovals() == 0 {
		return &Approvers{}, nil
	}
	if pol.AllowedSigners == "" {
		return nil, exitcode.InvalidFile(promotion.PolicyFile,
			fmt.Errorf("environments.%s.approvers: approvals are signed, but allowedSigners names no allowed-signers file", env))
	}
	data, err := r.ReadFile(ctx, base, pol.AllowedSigners)
	switch {
	case errors.Is(err, gitrepo.ErrNotFound):
		return nil, exitcode.InvalidFile(pol.AllowedSigners, fmt.Errorf("allowedSigners in %s: the file does not exist at %s", promotion.PolicyFile, base))
	case err != nil:
		return nil, exitcode.InvalidFile(pol.AllowedSigners, err)
	}
	if _, err := gitrepo.ParseAllowedSigners(data); err != nil {
		return nil, exitcode.InvalidFile(pol.AllowedSigners, fmt.Errorf("not an allowed-signers file: %w", err))
	}
	return &Approvers{env: e, file: pol.AllowedSigners, signers: data}, nil
}

// approvalCommit is a commit that adds approvals to the record.
type approvalCommit struct {
	commit string
	// added counts the approvals and overrides the commit adds, overrides
	// the overrides among them.
	added, overrides int
	sig              *gitrepo.Signature
	changed          []string
}

// history is what the commits of a PR say about its approvals.
type history struct {
	// wrote maps an approval to the last commit that added it.
	wrote map[promotion.Approval]*approvalCommit
	// overrode maps a freeze override to the last commit that added it.
	overrode map[promotion.Override]*approvalCommit
	// proposers maps a lower-cased identity to how it made the change: the
	// signer, author and committer of every commit that changes the
	// desired state or starts the attempt (a name a commit carries as free
	// text can only refuse an approval, never make one count).
	proposers map[string]string
	// keys maps the fingerprint of every key that signed such a commit to
	// how: four-eyes compares keys too, so one key listed for two
	// principals cannot propose as one and approve as the other.
	keys map[string]string
}

// approvalFile is a file approvals are added to: a promotion record, or a
// policy approval.
type approvalFile struct {
	// path is GitOps-root-relative.
	path string
	// at reads the file's approvals at a revision and the key of what they
	// approve (the record's attempt, the policy change's hash): none when
	// the file is absent or does not parse (it then carries no approval).
	at func(ctx context.Context, r *gitops.Repo, rev string) (approvals []promotion.Approval, key string)
	// overrides reads the file's freeze overrides at a revision (nil: the
	// file has none).
	overrides func(ctx context.Context, r *gitops.Repo, rev string) []promotion.Override
}

// recordFile is app's record in env.
func recordFile(app, env string) approvalFile {
	return approvalFile{path: promotion.RecordPath(app, env), at: func(ctx context.Context, r *gitops.Repo, rev string) ([]promotion.Approval, string) {
		rec := recordOrNil(ctx, r, rev, app, env)
		if rec == nil {
			return nil, ""
		}
		return rec.Approvals, fmt.Sprintf("%+v", rec.Key())
	}, overrides: func(ctx context.Context, r *gitops.Repo, rev string) []promotion.Override {
		if rec := recordOrNil(ctx, r, rev, app, env); rec != nil {
			return rec.Overrides
		}
		return nil
	}}
}

// policyApprovalFile is env's policy approval.
func policyApprovalFile(env string) approvalFile {
	file := promotion.PolicyApprovalPath(env)
	return approvalFile{path: file, at: func(ctx context.Context, r *gitops.Repo, rev string) ([]promotion.Approval, string) {
		pa, _, err := gitops.Read(ctx, r, rev, file, promotion.ParsePolicyApproval)
		if err != nil || pa == nil {
			return nil, ""
		}
		return pa.Approvals, pa.Change
	}}
}

// scan walks the commits base..head (first parents, oldest first) and
// sorts them into approval commits (they add approvals to f) and the
// others, whose identities are the proposers'.
func (a *Approvers) scan(ctx context.Context, r *gitops.Repo, base, head string, f approvalFile) (*history, error) {
	commits, err := r.FirstParentRange(ctx, base, head)
	if err != nil {
		return nil, err
	}
	h := &history{wrote: map[promotion.Approval]*approvalCommit{}, overrode: map[promotion.Override]*approvalCommit{}, proposers: map[string]string{},
		keys: map[string]string{}}
	for _, c := range commits {
		parent := c + "^1"
		prev, prevKey := f.at(ctx, r, parent)
		cur, key := f.at(ctx, r, c)
		changed, err := r.Changed(ctx, parent, c)
		if err != nil {
			return nil, err
		}
		var added []promotion.Approval
		for _, ap := range cur {
			if !slices.Contains(prev, ap) {
				added = append(added, ap)
			}
		}
		var overrode []promotion.Override
		if f.overrides != nil {
			prevO := f.overrides(ctx, r, parent)
			for _, o := range f.overrides(ctx, r, c) {
				if !slices.Contains(prevO, o) {
					overrode = append(overrode, o)
				}
			}
		}
		sig, err := r.VerifyCommit(ctx, c, a.signers)
		if err != nil {
			return nil, err
		}
		if len(added)+len(overrode) > 0 {
			ac := &approvalCommit{commit: c, added: len(added) + len(overrode), overrides: len(overrode), sig: sig, changed: changed}
			for _, ap := range added {
				h.wrote[ap] = ac
			}
			for _, o := range overrode {
				h.overrode[o] = ac
			}
			continue
		}
		newKey := key != "" && prevKey != key
		if !newKey && slices.Equal(changed, []string{r.Prefix + f.path}) {
			continue // a transition of the record (verify, reject): no change of the desired state
		}
		if err := h.addProposer(ctx, r, c, sig); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (h *history) addProposer(ctx context.Context, r *gitops.Repo, c string, sig *gitrepo.Signature) error {
	author, committer, err := r.Identities(ctx, c)
	if err != nil {
		return err
	}
	short := c[:min(len(c), 12)]
	for who, how := range map[string]string{author: "author of " + short, committer: "committer of " + short} {
		if who != "" {
			h.proposers[strings.ToLower(who)] = how
		}
	}
	if sig.Good() {
		h.proposers[strings.ToLower(sig.Principal)] = "signer of " + short
	}
	if sig != nil && sig.Key != "" {
		h.keys[sig.Key] = "its key signed " + short
	}
	return nil
}

// proposed says how principal proposed the change ("" when not).
func (h *history) proposed(principal string) string { return h.proposers[strings.ToLower(principal)] }

// recordOrNil is the record at rev, nil when there is none or it cannot
// be read (a record that does not parse carries no approval).
func recordOrNil(ctx context.Context, r *gitops.Repo, rev, app, env string) *promotion.Record {
	rec, err := promotion.ReadRecord(ctx, r, rev, app, env)
	if err != nil {
		return nil
	}
	return rec
}

// signedApprovals is the PR gate's step for signed approvals: with the
// base's approvers and allowed-signers file, every approval of the record
// must be written by one commit of the PR that git verifies as signed by
// that approver, an approver of the target environment who did not propose
// it, and enough distinct approvers must have signed.
func (c *promotionCheck) signedApprovals(ctx context.Context) error {
	rec := c.rec
	if rec.State == promotion.Halted || rec.State == promotion.Rejected {
		return nil
	}
	a, err := ReadApprovers(ctx, c.r, c.rep.Base, rec.Target.Environment)
	if err != nil || a.Required() == 0 {
		return err
	}
	h, err := a.scan(ctx, c.r, c.rep.Base, c.rep.Head, recordFile(rec.App, rec.Target.Environment))
	if err != nil {
		return err
	}
	good := 0
	for i, ap := range rec.Approvals {
		field := fmt.Sprintf("approvals[%d]", i)
		if why := a.judge(h, ap, c.r.Prefix+c.recFile); why != nil {
			why.File, why.Field = c.recFile, field
			c.rep.refuse(*why, "%s by %s: %s", field, ap.Approver, why.Reason)
			continue
		}
		good++
	}
	if need := a.Required(); good < need && (rec.Approval != nil || len(rec.Approvals) > 0) {
		c.rep.refuse(Finding{Rule: RuleApprovalCount, File: c.recFile, Field: "approvals"},
			"%d of the %d signed approvals %s needs (approvers: %s, allowed signers: %s at the base)", good, need,
			rec.Target.Environment, strings.Join(a.env.Approvers, ", "), a.file)
	}
	return nil
}

// judge says why the approval ap does not count (nil when it does).
func (a *Approvers) judge(h *history, ap promotion.Approval, recFile string) *Finding {
	ac, ok := h.wrote[ap]
	if !ok {
		return &Finding{Rule: RuleApprovalCommit, Reason: "no commit of this pull request adds it: an approval is a signed commit"}
	}
	return a.judgeCommit(h, ac, ap.Approver, recFile)
}

// judgeCommit says why the approval or override of approver that commit
// ac wrote does not count (nil when it does).
func (a *Approvers) judgeCommit(h *history, ac *approvalCommit, approver, recFile string) *Finding {
	short := ac.commit[:min(len(ac.commit), 12)]
	switch {
	case !ac.sig.Good():
		return &Finding{Rule: RuleApprovalSignature, Reason: fmt.Sprintf("commit %s: %s (%s at the base)", short, ac.sig.Problem(), a.file)}
	case h.keys[ac.sig.Key] != "":
		return &Finding{Rule: RuleFourEyes, Reason: fmt.Sprintf("commit %s is signed with the key of a commit of the change (%s): "+
			"one key proposes or approves, never both", short, h.keys[ac.sig.Key])}
	case ac.sig.Principal != approver:
		return &Finding{Rule: RuleApprovalSignature,
			Reason: fmt.Sprintf("commit %s is signed by %s, not by the approver it names", short, ac.sig.Principal)}
	case ac.added != 1 && ac.overrides == 0:
		return &Finding{Rule: RuleApprovalCommit, Reason: fmt.Sprintf("commit %s adds %d approvals: one signed commit is one approval", short, ac.added)}
	case ac.added != 1:
		return &Finding{Rule: RuleApprovalCommit, Reason: fmt.Sprintf("commit %s adds %d approvals and overrides: one signed commit is one approval "+
			"or one override", short, ac.added)}
	case !slices.Equal(ac.changed, []string{recFile}):
		return &Finding{Rule: RuleApprovalCommit, Reason: fmt.Sprintf("commit %s changes %s: an approval commit changes only the record",
			short, strings.Join(ac.changed, ", "))}
	case !a.env.IsApprover(approver):
		return &Finding{Rule: RuleApprover, Reason: fmt.Sprintf("%s is not an approver of %s (%s at the base lists %s)", approver, a.env.Name,
			promotion.PolicyFile, strings.Join(a.env.Approvers, ", "))}
	}
	if how := h.proposed(approver); how != "" {
		return &Finding{Rule: RuleFourEyes, Reason: fmt.Sprintf("%s proposed this change (%s) and cannot approve it", approver, how)}
	}

	return nil
}

// signer is the allowed-signers principal of the user's signing key: it
// signs a throwaway commit (no reference names it) on tip and has git
// verify it.
func (a *Approvers) signer(ctx context.Context, r *gitops.Repo, tip string) (string, error) {
	sha, err := r.Signing().Commit(ctx, tip, nil, "throughline: which key signs\n")
	if err != nil {
		return "", exitcode.Usagef("an approval in %s is a signed commit, and signing failed (configure git's SSH signing: "+
			"git config gpg.format ssh; git config user.signingkey ~/.ssh/id_ed25519.pub): %v", a.env.Name, err)
	}
	sig, err := r.VerifyCommit(ctx, sha, a.signers)
	if err != nil {
		return "", err
	}
	if !sig.Good() {
		return "", exitcode.Refuse(RuleApprovalSignature, "your signing key: %s (%s at the base branch)", sig.Problem(), a.file)
	}
	return sig.Principal, nil
}

// ApproverOf is the principal of the user's signing key, refusing one
// that is not an approver of the environment or is not the approver the
// user named.
func (a *Approvers) ApproverOf(ctx context.Context, r *gitops.Repo, branch, named string) (string, error) {
	tip, err := r.BranchTip(ctx, branch)
	if err != nil {
		return "", err
	}
	principal, err := a.signer(ctx, r, tip)
	if err != nil {
		return "", err
	}
	if named != "" && named != principal {
		return "", exitcode.Refuse(RuleApprovalSignature, "--approver %s, but your signing key is %s's in %s", named, principal, a.file)
	}
	if !a.env.IsApprover(principal) {
		return "", &exitcode.Refusal{Rule: RuleApprover, File: promotion.PolicyFile, Field: "environments." + a.env.Name + ".approvers",
			Reason: fmt.Sprintf("%s is not an approver of %s (the base branch's %s lists %s)", principal, a.env.Name, promotion.PolicyFile,
				strings.Join(a.env.Approvers, ", "))}
	}
	return principal, nil
}

// ProposedBy says how principal proposed the promotion of app to env on
// the attempt whose tip is tip ("" when it did not): the four-eyes rule
// that approve applies before it writes, and the gate again on the PR.
func (a *Approvers) ProposedBy(ctx context.Context, r *gitops.Repo, base, tip, app, env, principal string) (string, error) {
	h, err := a.scan(ctx, r, base, tip, recordFile(app, env))
	if err != nil {
		return "", err
	}
	return h.proposed(principal), nil
}

// PolicyProposedBy says how principal wrote the change from base to tip
// (its merge base with base) to what judges env ("" when it did not): the
// four-eyes rule policy approve applies before it writes, and the gate
// again on the pull request.
func (a *Approvers) PolicyProposedBy(ctx context.Context, r *gitops.Repo, base, tip, env, principal string) (string, error) {
	mb, err := r.MergeBase(ctx, base, tip)
	if err != nil {
		return "", err
	}
	h, err := a.scan(ctx, r, mb, tip, policyApprovalFile(env))
	if err != nil {
		return "", err
	}
	return h.proposed(principal), nil
}
