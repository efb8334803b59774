package runtimecheck

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// DefaultInterval is a check's interval when none is declared.
const DefaultInterval = 30 * time.Second

// Interval is the check's interval (DefaultInterval when unset).
func Interval(c v1alpha1.RuntimeCheck) time.Duration {
	if c.Interval.Duration > 0 {
		return c.Interval.Duration
	}
	return DefaultInterval
}

// Threshold is the check's failure threshold (1 when unset).
func Threshold(c v1alpha1.RuntimeCheck) int32 {
	if c.FailureThreshold > 0 {
		return c.FailureThreshold
	}
	return 1
}

// unverifiableAfter is how long the check may stay Unverifiable before it
// halts, and the field that says so: its unverifiableAfter, else the
// environment's reconcileDeadline (dl.ObservedRevision, as the render
// copied it into spec.deadlines); zero when neither is set (an
// unmeasurable check then waits for ever).
func unverifiableAfter(c v1alpha1.RuntimeCheck, dl *v1alpha1.Deadlines) (time.Duration, string) {
	switch {
	case c.UnverifiableAfter != nil && c.UnverifiableAfter.Duration > 0:
		return c.UnverifiableAfter.Duration, "unverifiableAfter"
	case dl != nil && dl.ObservedRevision != nil && dl.ObservedRevision.Duration > 0:
		return dl.ObservedRevision.Duration, "the environment's reconcileDeadline"
	}
	return 0, ""
}

// UnverifiableSince is when the check's current run of Unverifiable
// evaluations began: status.unverifiableSince, or its last evaluation for a
// status written before that field existed.
func UnverifiableSince(s v1alpha1.CheckStatus) time.Time {
	if s.UnverifiableSince != nil {
		return s.UnverifiableSince.Time
	}
	return s.LastEvaluated.Time
}

// Find returns the status of the named check, nil when none.
func Find(statuses []v1alpha1.CheckStatus, name string) *v1alpha1.CheckStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// Due reports whether a check is to be evaluated at now: never evaluated,
// its interval passed since the last evaluation, or a Job still running
// (reading it costs a cache lookup; its watch wakes the verifier). A Job
// that finished is never evaluated again for the generation.
func Due(c v1alpha1.RuntimeCheck, prev *v1alpha1.CheckStatus, now time.Time) bool {
	if prev == nil || prev.LastEvaluated.IsZero() {
		return true
	}
	if c.Job != nil {
		return prev.Verdict == v1alpha1.CheckPending || prev.Verdict == v1alpha1.CheckUnverifiable && !now.Before(next(c, prev))
	}
	return !now.Before(next(c, prev))
}

func next(c v1alpha1.RuntimeCheck, prev *v1alpha1.CheckStatus) time.Time {
	return prev.LastEvaluated.Add(Interval(c))
}

// Record folds a result into the check's status: a failure counts one more
// consecutive failure (a final one counts up to the threshold at once), a
// pass resets the count, Pending and Unverifiable leave it as it was. An
// Unverifiable result keeps the start of the run of Unverifiable ones it
// continues (unverifiableSince; now when it begins one), any other verdict
// ends the run.
func Record(c v1alpha1.RuntimeCheck, prev *v1alpha1.CheckStatus, r Result, now time.Time) v1alpha1.CheckStatus {
	s := v1alpha1.CheckStatus{
		Name: c.Name, Verdict: r.Verdict, Value: truncate(r.Value, 256), Message: truncate(r.Message, 1024),
		LastEvaluated: metav1.NewTime(now.UTC().Truncate(time.Second)),
	}
	if prev != nil {
		s.ConsecutiveFailures = prev.ConsecutiveFailures
	}
	if r.Verdict == v1alpha1.CheckUnverifiable {
		since := s.LastEvaluated
		if prev != nil && prev.Verdict == v1alpha1.CheckUnverifiable {
			since = metav1.NewTime(UnverifiableSince(*prev))
		}
		s.UnverifiableSince = &since
	}
	switch r.Verdict {
	case v1alpha1.CheckPassed:
		s.ConsecutiveFailures = 0
	case v1alpha1.CheckFailed:
		s.ConsecutiveFailures++
		if r.Final {
			s.ConsecutiveFailures = max(s.ConsecutiveFailures, Threshold(c))
		}
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// Decision is the checks' verdict on the Ready condition of an Acceptance
// whose images are verified.
type Decision struct {
	// Reason is Verified, Soaking, CheckFailed, CheckUnverifiable or
	// Unverifiable.
	Reason  string
	Message string
	// Checks are the names of the checks that decided a CheckFailed (the
	// first that reached its threshold) or a CheckUnverifiable (every
	// check unmeasurable past its deadline).
	Checks []string
}

// Decide judges the checks' statuses (dl: the environment's deadlines,
// spec.deadlines): CheckFailed as soon as a check reached its failure
// threshold; CheckUnverifiable when a check has been Unverifiable for its
// unverifiableAfter (its own, else reconcileDeadline) since its run of Unverifiable evaluations began;
// Unverifiable while a check could not be measured (never Verified);
// Soaking while a check has not passed yet or the soak time since
// soakStart has not passed; Verified when every check passed at its last
// evaluation, after soakStart, and the soak is over.
func Decide(spec v1alpha1.RuntimeChecks, dl *v1alpha1.Deadlines, statuses []v1alpha1.CheckStatus, soakStart, now time.Time) Decision {
	var unverif, waiting, expired, expiredNames []string
	for _, c := range spec.Checks {
		s := Find(statuses, c.Name)
		switch {
		case s == nil:
			waiting = append(waiting, c.Name+" not evaluated yet")
		case s.ConsecutiveFailures >= Threshold(c):
			return Decision{Reason: v1alpha1.ReasonCheckFailed, Checks: []string{c.Name},
				Message: fmt.Sprintf("check %s failed %d times in a row (threshold %d): value %s: %s",
					c.Name, s.ConsecutiveFailures, Threshold(c), orNone(s.Value), s.Message)}
		case s.Verdict == v1alpha1.CheckUnverifiable:
			after, from := unverifiableAfter(c, dl)
			since := UnverifiableSince(*s)
			switch {
			case after > 0 && !now.Before(since.Add(after)):
				expiredNames = append(expiredNames, c.Name)
				expired = append(expired, fmt.Sprintf("check %s could not be measured within %s %s (unverifiable since %s): %s",
					c.Name, from, after, since.UTC().Format(time.RFC3339), s.Message))
			case after > 0:
				unverif = append(unverif, fmt.Sprintf("check %s: %s (unverifiable since %s; halts at %s, %s %s)", c.Name, s.Message,
					since.UTC().Format(time.RFC3339), since.Add(after).UTC().Format(time.RFC3339), from, after))
			default:
				unverif = append(unverif, fmt.Sprintf("check %s: %s", c.Name, s.Message))
			}
		case s.Verdict == v1alpha1.CheckFailed:
			waiting = append(waiting, fmt.Sprintf("%s failed %d of %d (value %s)", c.Name, s.ConsecutiveFailures, Threshold(c), orNone(s.Value)))
		case s.Verdict != v1alpha1.CheckPassed:
			waiting = append(waiting, fmt.Sprintf("%s %s: %s", c.Name, strings.ToLower(string(s.Verdict)), s.Message))
		case s.LastEvaluated.Time.Before(soakStart.Truncate(time.Second)):
			waiting = append(waiting, c.Name+" not evaluated since the soak began")
		}
	}
	if len(expired) > 0 {
		return Decision{Reason: v1alpha1.ReasonCheckUnverifiable, Message: strings.Join(expired, "; "), Checks: expiredNames}
	}
	if len(unverif) > 0 {
		return Decision{Reason: v1alpha1.ReasonUnverifiable, Message: strings.Join(unverif, "; ")}
	}
	end := soakStart.Add(spec.Soak.Duration)
	if len(waiting) > 0 {
		return Decision{Reason: v1alpha1.ReasonSoaking, Message: fmt.Sprintf("images verified; soak until %s; %s",
			end.UTC().Format(time.RFC3339), strings.Join(waiting, "; "))}
	}
	if now.Before(end) {
		return Decision{Reason: v1alpha1.ReasonSoaking, Message: fmt.Sprintf("images verified, %d checks green; soak until %s",
			len(spec.Checks), end.UTC().Format(time.RFC3339))}
	}
	return Decision{Reason: v1alpha1.ReasonVerified, Message: fmt.Sprintf("%d checks green through a soak of %s",
		len(spec.Checks), spec.Soak.Duration)}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// NextDue is how long until the next check is due, the soak ends or an
// Unverifiable check's unverifiableAfter passes (dl: spec.deadlines),
// whichever comes first (at least a second); zero when nothing is due
// again (every check final).
func NextDue(spec v1alpha1.RuntimeChecks, dl *v1alpha1.Deadlines, statuses []v1alpha1.CheckStatus, soakStart, now time.Time) time.Duration {
	var d time.Duration
	take := func(t time.Time) {
		w := max(t.Sub(now), time.Second)
		if d == 0 || w < d {
			d = w
		}
	}
	if end := soakStart.Add(spec.Soak.Duration); now.Before(end) {
		take(end)
	}
	for _, c := range spec.Checks {
		s := Find(statuses, c.Name)
		switch {
		case s == nil || s.LastEvaluated.IsZero():
			take(now)
		case c.Job != nil && (s.Verdict == v1alpha1.CheckPassed || s.Verdict == v1alpha1.CheckFailed):
			// finished for this generation
		default:
			take(next(c, s))
		}
		if after, _ := unverifiableAfter(c, dl); s != nil && s.Verdict == v1alpha1.CheckUnverifiable && after > 0 {
			if end := UnverifiableSince(*s).Add(after); now.Before(end) {
				take(end)
			}
		}
	}
	return d
}
