package health

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/runtimecheck"
	"github.com/throughline-dev/throughline/tracing"
)

// CheckEvaluator evaluates one runtime check of an Acceptance;
// *runtimecheck.Evaluator is one.
type CheckEvaluator interface {
	Evaluate(ctx context.Context, o runtimecheck.Owner, c v1alpha1.RuntimeCheck) runtimecheck.Result
}

// CommittedChecks compares a live Acceptance's checks with the ones the
// GitOps repository commits for its overlay (*committed.Source of package
// checkfile/committed is one): differs says why they must not run (""
// when they agree), probe are the namespaces besides the Acceptance's own
// its HTTP checks may probe. An error is a failure to read Git.
type CommittedChecks interface {
	CompareChecks(ctx context.Context, namespace, sourcePath string, live *v1alpha1.RuntimeChecks) (differs string, probe []string, err error)
}

// applyRuntime folds the runtime checks and the rollout deadline into the
// image verdict rep, from the previous status prev (the state: soak start,
// each check's last evaluation, so that a restarted verifier resumes). It
// returns how long until a check is due or a deadline passes (0: nothing
// to wait for).
//
//   - Images not verified: a spec.deadlines.rollout passed since the
//     generation's rollout began (the Reconciling condition's transition)
//     turns Ready False, reason DeadlineExceeded, until the images verify.
//   - Images verified, checks declared: the soak starts (status.soakStartedAt,
//     kept for the generation); due checks are evaluated; the verdict is
//     runtimecheck.Decide's: Soaking (Ready Unknown), Verified (Ready True),
//     CheckFailed (Ready False, Stalled; kept for the generation, it halts),
//     CheckUnverifiable (a check unmeasurable past its unverifiableAfter or
//     the environment's reconcileDeadline: Ready False, Stalled; kept for
//     the generation, it halts) or Unverifiable (Ready Unknown). Once
//     Verified, the checks are done for the generation.
func (r *Reconciler) applyRuntime(ctx context.Context, acc *unstructured.Unstructured, rep *Report,
	prev v1alpha1.AcceptanceStatus, now time.Time,
) time.Duration {
	if rep.Reason == v1alpha1.ReasonInvalid {
		return 0
	}
	spec, err := DecodeSpec(acc)
	if err != nil {
		return 0
	}
	same := prev.ObservedGeneration == rep.Generation && prev.RenderedHash == rep.RenderedHash
	prevReason := ""
	if ready := meta.FindStatusCondition(prev.Conditions, v1alpha1.ConditionReady); same && ready != nil {
		prevReason = ready.Reason
	}
	hasChecks := spec.Checks != nil && len(spec.Checks.Checks) > 0
	if same && prev.SoakStartedAt != nil {
		rep.SoakStartedAt, rep.Checks = prev.SoakStartedAt, prev.Checks
	}
	halted := func(reason string) bool {
		if prevReason != reason || rep.Outcome == Mismatch {
			return false
		}
		ready := meta.FindStatusCondition(prev.Conditions, v1alpha1.ConditionReady)
		rep.Outcome, rep.Reason, rep.Message = Mismatch, reason, ready.Message
		rep.CheckPhase = reason == v1alpha1.ReasonCheckFailed || reason == v1alpha1.ReasonCheckUnverifiable
		return true
	}
	if halted(v1alpha1.ReasonCheckFailed) || halted(v1alpha1.ReasonCheckUnverifiable) {
		return 0
	}
	if rep.Outcome != Verified {
		if rep.Outcome == Mismatch || rep.SoakStartedAt != nil || halted(v1alpha1.ReasonDeadlineExceeded) {
			return 0
		}
		return rolloutDeadline(spec.Deadlines, rep, prev, now)
	}
	if !hasChecks {
		return 0
	}
	if rep.SoakStartedAt == nil {
		t := metav1.NewTime(now.UTC().Truncate(time.Second))
		rep.SoakStartedAt, rep.Checks = &t, nil
	}
	rep.CheckPhase = true
	if prevReason == v1alpha1.ReasonVerified && readyTrue(prev) {
		rep.Message += "; runtime checks passed through the soak"
		return 0 // the soak passed: the verdict is kept for the generation
	}
	probe, why := r.committedChecks(ctx, acc, &spec)
	if why != "" {
		// Nothing ran: the soak starts when the checks do.
		rep.Outcome, rep.Reason, rep.Message, rep.Checks, rep.SoakStartedAt = Unverifiable, v1alpha1.ReasonUnverifiable, why, nil, nil
		return 0 // Unverifiable: retried with backoff
	}
	return r.evaluateChecks(ctx, acc, rep, *spec.Checks, spec.Deadlines, probe, now)
}

// committedChecks asks r.Committed whether the live checks are the
// committed ones: why is not empty when they must not run (nothing is
// evaluated then). Without r.Committed every check runs, an HTTP probe
// only in the Acceptance's own namespace (runtimecheck's rule).
func (r *Reconciler) committedChecks(ctx context.Context, acc *unstructured.Unstructured,
	spec *v1alpha1.AcceptanceSpec) (probe []string, why string) {
	if r.Committed == nil {
		return nil, ""
	}
	differs, probe, err := r.Committed.CompareChecks(ctx, acc.GetNamespace(), spec.SourcePath, spec.Checks)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("runtime checks not run: the committed checks cannot be read: %v", err)
	case differs != "":
		return nil, "runtime checks not run (nothing probed): " + differs
	}
	return probe, ""
}

// evaluateChecks evaluates the due checks and decides (dl: the
// environment's deadlines, whose reconcileDeadline bounds how long a check
// may stay Unverifiable).
func (r *Reconciler) evaluateChecks(ctx context.Context, acc *unstructured.Unstructured, rep *Report, spec v1alpha1.RuntimeChecks,
	dl *v1alpha1.Deadlines, probe []string, now time.Time,
) time.Duration {
	ev := r.Checks
	if ev == nil {
		ev = &runtimecheck.Evaluator{}
	}
	owner := runtimecheck.Owner{
		Namespace: acc.GetNamespace(), Name: acc.GetName(), UID: acc.GetUID(), Generation: acc.GetGeneration(), ProbeNamespaces: probe,
	}
	statuses := make([]v1alpha1.CheckStatus, 0, len(spec.Checks))
	for _, c := range spec.Checks {
		prev := runtimecheck.Find(rep.Checks, c.Name)
		if !runtimecheck.Due(c, prev, now) {
			statuses = append(statuses, *prev)
			continue
		}
		statuses = append(statuses, runtimecheck.Record(c, prev, evaluate(ctx, ev, owner, c), now))
	}
	rep.Checks = statuses
	soak := rep.SoakStartedAt.Time
	d := runtimecheck.Decide(spec, dl, statuses, soak, now)
	switch d.Reason {
	case v1alpha1.ReasonVerified:
		rep.Message += "; " + d.Message
	case v1alpha1.ReasonCheckFailed, v1alpha1.ReasonCheckUnverifiable:
		rep.Outcome, rep.Reason, rep.Message = Mismatch, d.Reason, d.Message
		return 0
	case v1alpha1.ReasonUnverifiable:
		rep.Outcome, rep.Reason, rep.Message = Unverifiable, d.Reason, d.Message
	default:
		rep.Outcome, rep.Reason, rep.Message = Pending, d.Reason, d.Message
	}
	if d.Reason == v1alpha1.ReasonVerified {
		return 0
	}
	return runtimecheck.NextDue(spec, dl, statuses, soak, now)
}

// evaluate is ev.Evaluate in a health.check span naming the check, its
// verdict and value (a number or a status, never a probe's body).
func evaluate(ctx context.Context, ev CheckEvaluator, owner runtimecheck.Owner, c v1alpha1.RuntimeCheck) runtimecheck.Result {
	ctx, span := tracing.Start(ctx, "health.check", attrCheck.String(c.Name))
	res := ev.Evaluate(ctx, owner, c)
	span.SetAttributes(tracing.Result.String(string(res.Verdict)), attrValue.String(res.Value))
	span.End()
	return res
}

// rolloutDeadline turns a rollout that was not verified within the
// environment's rollout deadline into DeadlineExceeded. The rollout began
// when the Reconciling condition last turned True (now, if it is not).
func rolloutDeadline(dl *v1alpha1.Deadlines, rep *Report, prev v1alpha1.AcceptanceStatus, now time.Time) time.Duration {
	if dl == nil || dl.Rollout == nil || dl.Rollout.Duration <= 0 {
		return 0
	}
	start := now
	if c := meta.FindStatusCondition(prev.Conditions, v1alpha1.ConditionReconciling); c != nil && c.Status == metav1.ConditionTrue {
		start = c.LastTransitionTime.Time
	}
	left := start.Add(dl.Rollout.Duration).Sub(now)
	if left > 0 {
		return max(left, time.Second)
	}
	rep.Message = fmt.Sprintf("not verified within the rollout deadline %s (rollout began %s): %s: %s",
		dl.Rollout.Duration, start.UTC().Format(time.RFC3339), rep.Reason, rep.Message)
	rep.Outcome, rep.Reason = Mismatch, v1alpha1.ReasonDeadlineExceeded
	return 0
}

// FieldError is a field of an Acceptance's spec that is wrong; Field is
// its path (spec.checks.checks[0].unverifiableAfter).
type FieldError struct {
	Field string
	Err   error
}

// Error names the field, then what is wrong with it.
func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap is the cause.
func (e *FieldError) Unwrap() error { return e.Err }

// checkUnverifiableAfter refuses, as a *FieldError naming the field, a
// check's unverifiableAfter that is not a Go duration string or is
// negative (spec: the raw spec, before it is decoded; the render refuses
// the same in throughline-checks.yaml, this catches a hand-written
// Acceptance).
func checkUnverifiableAfter(spec map[string]any) error {
	raw, _, _ := unstructured.NestedFieldNoCopy(spec, "checks", "checks")
	checks, _ := raw.([]any)
	for i, c := range checks {
		m, ok := c.(map[string]any)
		if !ok || m["unverifiableAfter"] == nil {
			continue
		}
		field := fmt.Sprintf("spec.checks.checks[%d].unverifiableAfter", i)
		s, ok := m["unverifiableAfter"].(string)
		if !ok {
			return &FieldError{field, fmt.Errorf("not a duration (want a string like \"30m\"): %v", m["unverifiableAfter"])}
		}
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return &FieldError{field, fmt.Errorf("not a duration (want a string like \"30m\"): %q", s)}
		case d < 0:
			return &FieldError{field, fmt.Errorf("%s: must not be negative (zero means the environment's reconcileDeadline)", d)}
		}
	}
	return nil
}
