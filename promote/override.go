package promote

import (
	"context"
	"fmt"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// OverrideRequest asks to record a freeze override of app's attempt for To.
type OverrideRequest struct {
	App, To string
	// Branch is the attempt branch ("" for the only open one of App/To).
	Branch string
	// Approver, when set, must be the principal of the user's signing key.
	Approver string
	// Reason says why the promotion goes in while To is closed (recorded).
	Reason string
	// Expires is when the override ends: after Now, at most
	// promotion.MaxOverride later.
	Expires time.Time
	Now     time.Time
	// Renderer is throughline's version: the record's must be the same.
	Renderer string
}

// Override records a freeze override of the attempt: a commit signed with
// the user's own SSH key, whose principal (allowed-signers file at the base
// branch) must be an approver of the environment who did not propose the
// change, adding one entry to the record's overrides, bound to the
// attempt's approval inputs as its branch renders now, with the reason and
// the expiry. The state does not change. The gates (promote check,
// reconcile) let the attempt through a closed environment (a freeze, or
// outside its windows) while minApprovals distinct approvers' overrides
// are valid and unexpired.
func Override(ctx context.Context, r *gitops.Repo, req OverrideRequest) (*Transition, error) {
	if err := promotion.CheckOverrideReason(req.Reason); err != nil {
		return nil, exitcode.Usagef("--reason: %v", err)
	}
	if err := promotion.CheckOverrideLifetime(req.Now.Truncate(time.Second), req.Expires.Truncate(time.Second)); err != nil {
		return nil, exitcode.Usagef("--expires: the override %v", err)
	}
	b, err := AttemptBranch(ctx, r, req.Branch, req.App, req.To)
	if err != nil {
		return nil, err
	}
	base, err := r.BaseRev(ctx)
	if err != nil {
		return nil, err
	}
	a, err := gate.ReadApprovers(ctx, r, base, req.To)
	if err != nil {
		return nil, err
	}
	if a.Required() == 0 {
		return nil, &exitcode.Refusal{Rule: gate.RuleOverrideApprovers, File: promotion.PolicyFile, Field: "environments." + req.To + ".approvers",
			Reason: fmt.Sprintf("%s lists no approvers in the base branch's %s: a freeze override is a commit signed by its approvers", req.To,
				promotion.PolicyFile)}
	}
	approver, err := a.ApproverOf(ctx, r, b, req.Approver)
	if err != nil {
		return nil, err
	}
	writer := &gitops.Repo{Repo: r.Signing(), Base: r.Base}
	return updateRecord(ctx, writer, b, req.App, req.To, func(ctx context.Context, tip string, rec *promotion.Record) (string, error) {
		how, err := a.ProposedBy(ctx, r, base, tip, req.App, req.To, approver)
		if err != nil {
			return "", err
		}
		if how != "" {
			return "", exitcode.Refuse(gate.RuleFourEyes, "%s proposed %s (%s) and cannot override a freeze for it", approver, rec.PromotionID, how)
		}
		if rec.Target.Renderer != req.Renderer {
			return "", exitcode.Refuse(RulePromotion, "%s was rendered by throughline %s, this is %s: a new renderer makes a new attempt (propose again)",
				rec.PromotionID, rec.Target.Renderer, req.Renderer)
		}
		hash, why, err := approvableHash(ctx, r, tip, rec, req.Renderer)
		if err != nil {
			return "", err
		}
		if why != "" {
			return "", exitcode.Refuse(RuleApproval, "%s cannot be overridden: %s", rec.PromotionID, why)
		}
		in := rec.InputFor(req.Renderer)
		in.RenderedHash = hash
		if err := rec.AddOverride(approver, req.Reason, in, req.Expires, req.Now); err != nil {
			return "", exitcode.RefuseErr(RuleTransition, err)
		}
		o := rec.Overrides[len(rec.Overrides)-1]
		return fmt.Sprintf("promotion %s: freeze override %d by %s until %s\n\nReason: %s\n", rec.PromotionID, len(rec.Overrides), approver,
			o.ExpiresAt.Format(time.RFC3339), o.Reason), nil
	})
}
