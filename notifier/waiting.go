package notifier

import (
	"context"
	"fmt"
	"time"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/promotion"
)

// maxWaited bounds the waiting reasons a Processor remembers.
const maxWaited = 10000

// controllerFailed decides a delivery whose controller reports a failure
// of its own (Flux ReconciliationFailed or HealthCheckFailed, an Argo CD
// sync that failed or an Application Degraded) while the Acceptance does
// not condemn the artifact: the promotion waits for the controller to
// recover (a *WaitError carrying the "waiting" status), and is HALTED only
// once the environment's reconcileDeadline has passed.
func (p *Processor) controllerFailed(
	ctx context.Context, tip string, ev Event, rec *promotion.Record, out *evidence.Record,
) (*evidence.Record, error) {
	what := fmt.Sprintf("%s reports %s", reporter(ev), ev.Reason)
	if ev.Message != "" {
		what += ": " + ev.Message
	}
	if out.Reason != "" {
		what += " (" + out.Reason + ")" // what decide saw live
	}
	deadline, since, passed, err := p.deadline(ctx, tip, rec)
	if err != nil {
		return nil, err
	}
	if passed && p.leavesDeadlineToResync(ev) {
		return nil, &WaitError{Reason: "waiting: " + what + "; the reconcileDeadline has passed: the resync decides on the controller's own status"}
	}
	if passed {
		out.Decision, out.Class = promotion.Halted, ClassLive
		out.Reason = fmt.Sprintf("reconcileDeadline %s passed: %s (RECONCILING since %s)", deadline, what, since.UTC().Format(time.RFC3339))
		return out, nil
	}
	reason := "waiting: " + what + " (a controller-side failure: the promotion goes on when the controller recovers)"
	w := *out
	w.Decision, w.Reason = promotion.Reconciling, reason
	w.App, w.Environment, w.PromotionID = rec.App, rec.Target.Environment, rec.PromotionID
	w.Image, w.ArtifactDigest = rec.Artifact.Image, rec.Artifact.Digest
	w.DesiredRevision, w.DesiredRenderedHash = rec.Reconciling.DesiredRevision, rec.Target.RenderedHash
	w.DesiredCommit = rec.Reconciling.DesiredCommit
	return nil, &WaitError{Reason: reason, Waiting: &w}
}

// waitChanged reports whether w's waiting reason differs from the last one
// posted for its promotion, and remembers it.
func (p *Processor) waitChanged(w *evidence.Record) bool {
	k := w.App + "/" + w.Environment + "/" + w.PromotionID
	p.waitMu.Lock()
	defer p.waitMu.Unlock()
	if p.waited[k] == w.Reason {
		return false
	}
	if p.waited == nil || len(p.waited) >= maxWaited {
		p.waited = map[string]string{}
	}
	p.waited[k] = w.Reason
	return true
}

// leavesDeadlineToResync reports whether a reconcileDeadline HALT for ev
// is the resync's to decide (ResyncDecidesDeadline) and ev is a delivery,
// not the resync's reading of the controller object.
func (p *Processor) leavesDeadlineToResync(ev Event) bool {
	return p.ResyncDecidesDeadline && ev.Controller != ResyncController
}
