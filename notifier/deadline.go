package notifier

import (
	"context"
	"fmt"
	"time"

	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// deadlinePassed is the reason to halt rec when the controller of ev still
// observes a revision before the desired one and rec has been RECONCILING
// longer than its environment's reconcileDeadline in the policy at tip ("":
// no deadline, or not passed yet). A policy that does not parse is an
// error (exitcode.ErrInvalid): nothing is written.
func (p *Processor) deadlinePassed(ctx context.Context, tip string, ev Event, rec *promotion.Record) (string, error) {
	deadline, since, passed, err := p.deadline(ctx, tip, rec)
	if err != nil || !passed {
		return "", err
	}
	return fmt.Sprintf("reconcileDeadline %s passed: %s still observes %s, desired %s (RECONCILING since %s)",
		deadline, reporter(ev), ev.Revision, rec.Reconciling.DesiredRevision, since.UTC().Format(time.RFC3339)), nil
}

// deadline is the reconcileDeadline of rec's environment in the policy at
// tip, when rec became RECONCILING, and whether the deadline has passed
// (never without a policy, a deadline or a RECONCILING entry). A policy
// that does not parse is an error (exitcode.ErrInvalid).
func (p *Processor) deadline(ctx context.Context, tip string, rec *promotion.Record) (time.Duration, time.Time, bool, error) {
	pol, err := promotion.ReadPolicy(ctx, &gitops.Repo{Repo: p.Git.Repo}, tip)
	if err != nil {
		return 0, time.Time{}, false, fmt.Errorf("reconcileDeadline of %s: %w", rec.Target.Environment, err)
	}
	if pol == nil {
		return 0, time.Time{}, false, nil
	}
	env, ok := pol.Environments[rec.Target.Environment]
	if !ok || env.ReconcileDeadline == nil {
		return 0, time.Time{}, false, nil
	}
	d := env.ReconcileDeadline.Duration
	since, at, ok := rec.ReconcileDeadline(d)
	if !ok {
		return 0, time.Time{}, false, nil
	}
	return d, since, p.now().After(at), nil
}

// reporter names the controller object of ev.
func reporter(ev Event) string {
	if ev.Object != "" {
		return ev.Object
	}
	return ev.Ref.String()
}
