package gate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// Rules of freeze overrides (promote approve --override-freeze). The
// commit that writes an override is judged by the approval rules
// (approval-signature, approver, four-eyes, approval-commit).
const (
	// RuleOverrideBinding: the override's input hash is not the attempt's
	// (another attempt or render, or its reason or expiry edited after it
	// was signed).
	RuleOverrideBinding = "override-binding"
	// RuleOverrideLifetime: the override lasts longer than
	// promotion.MaxOverride, expires before it was signed, or says it was
	// signed after the gate's time.
	RuleOverrideLifetime = "override-lifetime"
	// RuleOverrideExpired: the environment is closed and the override
	// expired before the gate ran.
	RuleOverrideExpired = "override-expired"
	// RuleOverrideCount: the environment is closed and fewer distinct
	// approvers signed a valid override than its minApprovals.
	RuleOverrideCount = "override-count"
	// RuleOverrideApprovers: the environment lists no approvers, so nobody
	// can sign an override.
	RuleOverrideApprovers = "override-approvers"
)

// clockSkew is how far an override's approvedAt may be ahead of the gate's
// clock (the signer's machine and CI disagree by that much at most).
const clockSkew = 5 * time.Minute

// OverrideVerdict is what a record's freeze overrides are worth at a time.
type OverrideVerdict struct {
	// Findings say why each override that does not count is refused.
	Findings []Finding
	// Approvers are the distinct approvers of the overrides that count,
	// in the order they signed.
	Approvers []string
	// Need is how many distinct approvers must override (the
	// environment's minApprovals).
	Need int
	// Until is the earliest expiry among the counted overrides: the time
	// the cover ends.
	Until time.Time
	// Reasons are the counted overrides' reasons, as "approver: reason".
	Reasons []string
}

// Covers reports whether enough distinct approvers' overrides count.
func (v *OverrideVerdict) Covers() bool { return v.Need > 0 && len(v.Approvers) >= v.Need }

// Summary says who overrode, why and until when (or why the overrides
// fall short).
func (v *OverrideVerdict) Summary() string {
	if v.Covers() {
		return fmt.Sprintf("overridden by %s until %s (%s)", strings.Join(v.Approvers, ", "), v.Until.UTC().Format(time.RFC3339),
			strings.Join(v.Reasons, "; "))
	}
	return fmt.Sprintf("%d of the %d signed freeze overrides it needs", len(v.Approvers), v.Need)
}

// judgeOverrides judges rec's overrides at now with a (the base's
// approvers), in (the attempt's approval inputs as the target renders now)
// and, when h is not nil, the commits that wrote them (the PR's history:
// the signature, the approver, four-eyes; repoFile is the record's path in
// the Git repository, recFile in the GitOps root). closed tells whether the
// environment is closed now: only then does an expired override refuse.
func judgeOverrides(a *Approvers, h *history, rec *promotion.Record, in promotion.ApprovalInput, recFile, repoFile string, now time.Time,
	closed bool) *OverrideVerdict {
	v := &OverrideVerdict{Need: a.Required()}
	for i, o := range rec.Overrides {
		field := fmt.Sprintf("overrides[%d]", i)
		f := func(rule, format string, args ...any) {
			v.Findings = append(v.Findings, Finding{Rule: rule, Environment: rec.Target.Environment, File: recFile, Field: field,
				Reason: fmt.Sprintf("freeze override %s by %s: %s", field, o.Approver, fmt.Sprintf(format, args...))})
		}
		if a.env == nil {
			f(RuleOverrideApprovers, "%s lists no approvers in %s at the base: nobody can sign an override", rec.Target.Environment,
				promotion.PolicyFile)
			continue
		}
		if h != nil {
			ac, ok := h.overrode[o]
			if !ok {
				f(RuleApprovalCommit, "no commit of this pull request adds it: an override is a signed commit")
				continue
			}
			if why := a.judgeCommit(h, ac, o.Approver, repoFile); why != nil {
				f(why.Rule, "%s", why.Reason)
				continue
			}
		} else if !a.env.IsApprover(o.Approver) {
			f(RuleApprover, "%s is not an approver of %s (%s at the base lists %s)", o.Approver, a.env.Name, promotion.PolicyFile,
				strings.Join(a.env.Approvers, ", "))
			continue
		}
		if why := rec.OverrideVoid(o, in); why != "" {
			f(RuleOverrideBinding, "%s", why)
			continue
		}
		if err := promotion.CheckOverrideLifetime(o.ApprovedAt, o.ExpiresAt); err != nil {
			f(RuleOverrideLifetime, "%v", err)
			continue
		}
		if o.ApprovedAt.After(now.Add(clockSkew)) { // a lifetime counted from a future signing time lasts longer than it says
			f(RuleOverrideLifetime, "approvedAt %s is after the gate's time %s", o.ApprovedAt.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
			continue
		}
		if !o.Active(now) {
			if closed {
				f(RuleOverrideExpired, "expired at %s, before %s", o.ExpiresAt.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
			}
			continue
		}
		if !slices.Contains(v.Approvers, o.Approver) {
			v.Approvers = append(v.Approvers, o.Approver)
			v.Reasons = append(v.Reasons, o.Approver+": "+o.Reason)
		}
		if v.Until.IsZero() || o.ExpiresAt.Before(v.Until) {
			v.Until = o.ExpiresAt
		}
	}
	return v
}

// ReconcileOverrides judges rec's overrides when its merge is reconciled
// at now (the environment closed): the approvers of env at base, the
// binding to in (the target as merged), the lifetime and the expiry at
// now. The commits that wrote them were judged by the PR gate before the
// merge (a squash merge keeps no signature to verify again), as the
// approvals were.
func ReconcileOverrides(ctx context.Context, r *gitops.Repo, base string, rec *promotion.Record, in promotion.ApprovalInput,
	now time.Time) (*OverrideVerdict, error) {
	if len(rec.Overrides) == 0 {
		return &OverrideVerdict{}, nil // no override to judge: the closure decides
	}
	a, err := ReadApprovers(ctx, r, base, rec.Target.Environment)
	if err != nil {
		return nil, err
	}
	file := promotion.RecordPath(rec.App, rec.Target.Environment)
	return judgeOverrides(a, nil, rec, in, file, r.Prefix+file, now, true), nil
}

// overrides is the window step's judge of the record's freeze overrides:
// every override present is judged (a forged one is refused even while the
// environment is open: the record is the audit trail); closed is the
// window's refusal (nil: open), which the overrides lift only when enough
// distinct approvers signed valid, unexpired ones.
func (c *promotionCheck) overrides(ctx context.Context, closed *exitcode.Refusal) error {
	rec := c.rec
	if rec == nil || len(rec.Overrides) == 0 {
		if closed != nil {
			c.rep.refuse(Finding{Rule: closed.Rule, Environment: c.rep.Environment, File: closed.File, Field: closed.Field}, "%s", closed.Reason)
		}
		return nil
	}
	a, err := ReadApprovers(ctx, c.r, c.rep.Base, rec.Target.Environment)
	if err != nil {
		return err
	}
	var h *history
	if a.env != nil {
		if h, err = a.scan(ctx, c.r, c.rep.Base, c.rep.Head, recordFile(rec.App, rec.Target.Environment)); err != nil {
			return err
		}
	}
	v := judgeOverrides(a, h, rec, rec.InputFor(c.req.Renderer), c.recFile, c.r.Prefix+c.recFile, c.req.Now, closed != nil)
	for _, f := range v.Findings {
		c.rep.refuse(f, "%s", f.Reason)
	}
	switch {
	case closed == nil:
	case v.Covers():
		c.rep.Warnings = append(c.rep.Warnings, Finding{Rule: closed.Rule, Environment: c.rep.Environment, File: closed.File, Field: closed.Field,
			Reason: closed.Reason + "; " + v.Summary()})
	default:
		c.rep.refuse(Finding{Rule: RuleOverrideCount, Environment: c.rep.Environment, File: c.recFile, Field: "overrides"},
			"%s is closed and its freeze overrides do not lift it: %s (approvers: %s)", rec.Target.Environment, v.Summary(),
			strings.Join(a.approverNames(), ", "))
		c.rep.refuse(Finding{Rule: closed.Rule, Environment: c.rep.Environment, File: closed.File, Field: closed.Field}, "%s", closed.Reason)
	}
	return nil
}

// approverNames are the environment's approvers (none without).
func (a *Approvers) approverNames() []string {
	if a.env == nil {
		return nil
	}
	return a.env.Approvers
}
