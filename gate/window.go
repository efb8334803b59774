package gate

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/window"
)

// Window refuses a promotion into env at now when the policy at base
// closes env (its windows or a freeze, package window): exit 3, rule
// outside-window or frozen, naming the policy field and the next opening.
// A rollback passes when env's rollbackInFreeze is allow. Every gate that
// moves an artifact into an environment asks it (propose, candidate,
// rollback, promote check, reconcile), with the policy at the base branch,
// never the branch's own.
func Window(ctx context.Context, r *gitops.Repo, base, env string, now time.Time, rollback bool) error {
	pol, err := promotion.ReadPolicy(ctx, r, base)
	if err != nil || pol == nil {
		return err
	}
	e, ok := pol.Environments[env]
	if !ok || rollback && !window.RollbackHeld(e) {
		return nil
	}
	s, err := window.Compile(env, e)
	if err != nil { // ReadPolicy has checked it: a bug if it happens
		return &exitcode.InvalidInput{File: promotion.PolicyFile, Err: err}
	}
	if c := s.Check(now); c != nil {
		return &exitcode.Refusal{Rule: c.Rule, File: promotion.PolicyFile, Field: c.Field, Reason: c.Reason}
	}
	return nil
}

// ClosedEnvironment is an environment that does not accept promotions.
type ClosedEnvironment struct {
	Environment string `json:"environment"`
	window.Closed
}

// Closed lists, by name, the environments the policy at base closes at now
// (its windows, a freeze): what promote status shows below its table.
func Closed(ctx context.Context, r *gitops.Repo, base string, now time.Time) ([]ClosedEnvironment, error) {
	pol, err := promotion.ReadPolicy(ctx, r, base)
	if err != nil || pol == nil {
		return nil, err
	}
	names := make([]string, 0, len(pol.Environments))
	for name := range pol.Environments {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []ClosedEnvironment
	for _, name := range names {
		if c := closedAt(name, pol.Environments[name], now); c != nil {
			out = append(out, ClosedEnvironment{Environment: name, Closed: *c})
		}
	}
	return out, nil
}

// closedAt is why env (its policy e, read at the base) does not accept a
// change at now (nil: it does). The registry has checked e's windows.
func closedAt(env string, e v1alpha1.EnvironmentPolicy, now time.Time) *window.Closed {
	s, err := window.Compile(env, e)
	if err != nil {
		return nil
	}
	return s.Check(now)
}

// window refuses the promotion when its target environment does not
// accept promotions at the gate's time (Window, with the policy at the
// base branch), unless the record's signed freeze overrides lift it
// (overrides).
func (c *promotionCheck) window(ctx context.Context) error {
	err := Window(ctx, c.r, c.rep.Base, c.rep.Environment, c.req.Now, c.rec != nil && c.rec.VerifiedIn.IsPriorAcceptance())
	var re *exitcode.Refusal
	if err != nil && !errors.As(err, &re) {
		return err
	}
	return c.overrides(ctx, re)
}
