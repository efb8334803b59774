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
	pol, err := promotion.ReadPolicy(ctx, &gitops.Repo{Repo: p.Git.Repo}, tip)
	if err != nil {
		return "", fmt.Errorf("reconcileDeadline of %s: %w", rec.Target.Environment, err)
	}
	if pol == nil {
		return "", nil
	}
	env, ok := pol.Environments[rec.Target.Environment]
	if !ok || env.ReconcileDeadline == nil || env.ReconcileDeadline.Duration <= 0 {
		return "", nil
	}
	since, ok := reconcilingSince(rec)
	if !ok {
		return "", nil
	}
	deadline := env.ReconcileDeadline.Duration
	if !p.now().After(since.Add(deadline)) {
		return "", nil
	}
	object := ev.Object
	if object == "" {
		object = ev.Ref.String()
	}
	return fmt.Sprintf("reconcileDeadline %s passed: %s still observes %s, desired %s (RECONCILING since %s)",
		deadline, object, ev.Revision, rec.Reconciling.DesiredRevision, since.UTC().Format(time.RFC3339)), nil
}

// reconcilingSince is when rec became RECONCILING: its last history entry
// in that state.
func reconcilingSince(rec *promotion.Record) (time.Time, bool) {
	for i := len(rec.History) - 1; i >= 0; i-- {
		if rec.History[i].State == promotion.Reconciling {
			return rec.History[i].At, true
		}
	}
	return time.Time{}, false
}
