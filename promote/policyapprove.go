package promote

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// PolicyApproveRequest asks to approve the change a branch makes to what
// judges Environment.
type PolicyApproveRequest struct {
	Environment string
	// Branch is the pull request's branch, Base the branch it merges into
	// ("": the repository's base branch).
	Branch, Base string
	// Approver, when set, must be the principal of the user's signing key.
	Approver string
	Expires  time.Time
	Now      time.Time
}

// PolicyApproval is an approval of a change to what judges an environment,
// committed.
type PolicyApproval struct {
	Document *promotion.PolicyApproval
	Diff     *gate.JudgesDiff
	Approver string
	Branch   string
	Commit   string
}

// ApprovePolicy approves the change Branch makes to what judges
// Environment (gate.JudgesChange, from its merge base with the base
// branch) with a commit signed by the user's SSH key that adds one
// approval to the environment's policy approval file, bound to the
// change's hash. The approver is the key's principal in the base's
// allowed-signers file, an approver of the environment who wrote no commit
// of the change. A change the approval file holds for another hash is
// replaced: its approvals approved another change. The gate counts the
// approvals (throughline check), so a refusal here only saves a commit.
func ApprovePolicy(ctx context.Context, r *gitops.Repo, req PolicyApproveRequest) (*PolicyApproval, error) {
	if req.Branch == "" || req.Environment == "" {
		return nil, exitcode.Usagef("--environment and --branch are required")
	}
	if !req.Expires.After(req.Now) {
		return nil, exitcode.Usagef("--expires %s is not in the future", req.Expires.Format(time.RFC3339))
	}
	base, err := policyBase(ctx, r, req)
	if err != nil {
		return nil, err
	}
	a, err := gate.ReadApprovers(ctx, r, base, req.Environment)
	if err != nil {
		return nil, err
	}
	if a.Required() == 0 {
		return nil, exitcode.Refuse(gate.RuleApprover, "%s lists no approvers at the base branch: a change to what judges it needs none, "+
			"or cannot be approved if it is protected", req.Environment)
	}
	approver, err := a.ApproverOf(ctx, r, req.Branch, req.Approver)
	if err != nil {
		return nil, err
	}
	out := &PolicyApproval{Approver: approver, Branch: req.Branch}
	file := promotion.PolicyApprovalPath(req.Environment)
	writer := &gitops.Repo{Repo: r.Signing(), Base: r.Base}
	out.Commit, err = writer.Swap(ctx, req.Branch, func(ctx context.Context, tip string) (map[string][]byte, string, error) {
		d, err := gate.JudgesChange(ctx, r, base, tip, req.Environment)
		if err != nil {
			return nil, "", err
		}
		if d == nil {
			return nil, "", exitcode.Refuse(gate.RuleJudges, "%s changes nothing that judges %s (from its merge base with %s)", req.Branch,
				req.Environment, base)
		}
		how, err := a.PolicyProposedBy(ctx, r, base, tip, req.Environment, approver)
		if err != nil {
			return nil, "", err
		}
		if how != "" {
			return nil, "", exitcode.Refuse(gate.RuleFourEyes, "%s wrote this change to what judges %s (%s) and cannot approve it",
				approver, req.Environment, how)
		}
		doc, _, err := gitops.Read(ctx, r, tip, file, promotion.ParsePolicyApproval)
		if err != nil {
			return nil, "", err
		}
		if doc == nil || doc.Change != d.Change {
			doc = &promotion.PolicyApproval{APIVersion: v1alpha1.APIVersion, Kind: promotion.PolicyApprovalKind, Environment: req.Environment,
				Change: d.Change, Changes: d.Words(), Approvals: []promotion.Approval{}}
		}
		for _, ap := range doc.Approvals {
			if ap.Approver == approver {
				return nil, "", exitcode.Refuse(gate.RuleApprovalCommit, "%s already approved change %s of what judges %s", approver, d.Change,
					req.Environment)
			}
		}
		doc.Approvals = append(doc.Approvals, promotion.Approval{Approver: approver, InputHash: d.Change, ExpiresAt: req.Expires.UTC(),
			ApprovedAt: req.Now.UTC()})
		data, err := doc.Marshal()
		if err != nil {
			return nil, "", err
		}
		out.Document, out.Diff = doc, d
		msg := fmt.Sprintf("policy: approval %d of %d by %s of what judges %s (change %s) until %s\n\n%s\n", len(doc.Approvals),
			a.Required(), approver, req.Environment, d.Change, req.Expires.UTC().Format(time.RFC3339), strings.Join(d.Words(), "\n"))
		return map[string][]byte{file: data}, msg, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// policyBase resolves the base the change is judged against: req.Base, or
// the repository's base branch, which must not be the branch itself.
func policyBase(ctx context.Context, r *gitops.Repo, req PolicyApproveRequest) (string, error) {
	if req.Base == "" {
		if r.Base == req.Branch {
			return "", exitcode.Usagef("--branch %s is the base branch: name the branch of the pull request, or the base with --base", req.Branch)
		}
		return r.BaseRev(ctx)
	}
	base, err := r.Resolve(ctx, req.Base)
	if err != nil {
		return "", exitcode.Usagef("--base %s: %v", req.Base, err)
	}
	return base, nil
}
