package runtimecheck

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

var t0 = time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC)

func promCheck(name string, threshold int32) v1alpha1.RuntimeCheck {
	return v1alpha1.RuntimeCheck{Name: name, Interval: metav1.Duration{Duration: 10 * time.Second}, FailureThreshold: threshold,
		Prometheus: &v1alpha1.PrometheusCheck{Query: "q", Op: "<", Threshold: 1}}
}

func st(name string, v v1alpha1.CheckVerdict, fails int32, at time.Time) v1alpha1.CheckStatus {
	return v1alpha1.CheckStatus{Name: name, Verdict: v, ConsecutiveFailures: fails, LastEvaluated: metav1.NewTime(at), Value: "0.5"}
}

func TestRecord(t *testing.T) {
	t.Parallel()
	c := promCheck("errors", 3)
	job := v1alpha1.RuntimeCheck{Name: "smoke", FailureThreshold: 3, Job: &v1alpha1.JobCheck{Image: "i"}}
	prev := func(n int32) *v1alpha1.CheckStatus { s := st(c.Name, v1alpha1.CheckFailed, n, t0); return &s }
	tests := []struct {
		name  string
		check v1alpha1.RuntimeCheck
		prev  *v1alpha1.CheckStatus
		r     Result
		want  int32
	}{
		{"first failure", c, nil, failed("2", ""), 1},
		{"second failure", c, prev(1), failed("2", ""), 2},
		{"a pass resets", c, prev(2), passed("0", ""), 0},
		{"unverifiable keeps the count", c, prev(2), unverifiable("down"), 2},
		{"pending keeps the count", c, prev(1), pending("running"), 1},
		{"a finished Job's failure reaches the threshold at once", job, nil, Result{Verdict: v1alpha1.CheckFailed, Final: true}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Record(tt.check, tt.prev, tt.r, t0.Add(1500*time.Millisecond))
			if s.ConsecutiveFailures != tt.want || s.Verdict != tt.r.Verdict || !s.LastEvaluated.Time.Equal(t0.Add(time.Second)) {
				t.Fatalf("got %+v, want %d consecutive failures", s, tt.want)
			}
		})
	}
}

func TestDue(t *testing.T) {
	t.Parallel()
	c := promCheck("errors", 1)
	job := v1alpha1.RuntimeCheck{Name: "smoke", Job: &v1alpha1.JobCheck{Image: "i"}}
	p := func(v v1alpha1.CheckVerdict) *v1alpha1.CheckStatus { s := st("x", v, 0, t0); return &s }
	tests := []struct {
		name  string
		check v1alpha1.RuntimeCheck
		prev  *v1alpha1.CheckStatus
		now   time.Time
		want  bool
	}{
		{"never evaluated", c, nil, t0, true},
		{"within the interval", c, p(v1alpha1.CheckPassed), t0.Add(9 * time.Second), false},
		{"interval passed", c, p(v1alpha1.CheckPassed), t0.Add(10 * time.Second), true},
		{"a restarted verifier resumes from status", c, p(v1alpha1.CheckFailed), t0.Add(3 * time.Second), false},
		{"a running Job is read at every round", job, p(v1alpha1.CheckPending), t0.Add(time.Second), true},
		{"a completed Job is not run again", job, p(v1alpha1.CheckPassed), t0.Add(time.Hour), false},
		{"a failed Job is not run again", job, p(v1alpha1.CheckFailed), t0.Add(time.Hour), false},
		{"a Job that could not be created is retried at the interval", job, p(v1alpha1.CheckUnverifiable), t0.Add(31 * time.Second), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Due(tt.check, tt.prev, tt.now); got != tt.want {
				t.Fatalf("Due = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDecide is the Ready verdict of the checks: never Verified before the
// soak is over with every check passed, never Verified with an
// Unverifiable check, CheckFailed once a check reaches its threshold.
func TestDecide(t *testing.T) {
	t.Parallel()
	spec := v1alpha1.RuntimeChecks{Soak: metav1.Duration{Duration: 5 * time.Minute}, Checks: []v1alpha1.RuntimeCheck{promCheck("errors", 2), promCheck("latency", 1)}}
	after := t0.Add(6 * time.Minute)
	green := []v1alpha1.CheckStatus{st("errors", v1alpha1.CheckPassed, 0, after), st("latency", v1alpha1.CheckPassed, 0, after)}
	tests := []struct {
		name     string
		statuses []v1alpha1.CheckStatus
		now      time.Time
		reason   string
		msg      string
	}{
		{"nothing evaluated", nil, t0, v1alpha1.ReasonSoaking, "not evaluated yet"},
		{"green, soak running", []v1alpha1.CheckStatus{st("errors", v1alpha1.CheckPassed, 0, t0), st("latency", v1alpha1.CheckPassed, 0, t0)},
			t0.Add(time.Minute), v1alpha1.ReasonSoaking, "2 checks green; soak until 2027-01-15T08:05:00Z"},
		{"green after the soak", green, after, v1alpha1.ReasonVerified, "2 checks green"},
		{"soak over, one check never evaluated", green[:1], after, v1alpha1.ReasonSoaking, "latency not evaluated yet"},
		{"soak over, a pass from before the soak began", []v1alpha1.CheckStatus{green[0], st("latency", v1alpha1.CheckPassed, 0, t0.Add(-time.Minute))},
			after, v1alpha1.ReasonSoaking, "since the soak began"},
		{"soak over, one failure under the threshold", []v1alpha1.CheckStatus{st("errors", v1alpha1.CheckFailed, 1, after), green[1]},
			after, v1alpha1.ReasonSoaking, "errors failed 1 of 2"},
		{"threshold reached", []v1alpha1.CheckStatus{st("errors", v1alpha1.CheckFailed, 2, t0), green[1]},
			t0.Add(time.Minute), v1alpha1.ReasonCheckFailed, "check errors failed 2 times in a row (threshold 2): value 0.5"},
		{"threshold 1 (default)", []v1alpha1.CheckStatus{green[0], st("latency", v1alpha1.CheckFailed, 1, t0)},
			t0, v1alpha1.ReasonCheckFailed, "check latency"},
		{"unverifiable after the soak is never Verified", []v1alpha1.CheckStatus{green[0], st("latency", v1alpha1.CheckUnverifiable, 0, after)},
			after.Add(time.Hour), v1alpha1.ReasonUnverifiable, "check latency"},
		{"a failure beats unverifiable", []v1alpha1.CheckStatus{st("errors", v1alpha1.CheckFailed, 2, t0), st("latency", v1alpha1.CheckUnverifiable, 0, t0)},
			t0, v1alpha1.ReasonCheckFailed, "errors"},
		{"pending", []v1alpha1.CheckStatus{green[0], st("latency", v1alpha1.CheckPending, 0, after)}, after, v1alpha1.ReasonSoaking, "latency pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(spec, nil, tt.statuses, t0, tt.now)
			if d.Reason != tt.reason || !strings.Contains(d.Message, tt.msg) {
				t.Fatalf("got %s %q; want %s containing %q", d.Reason, d.Message, tt.reason, tt.msg)
			}
		})
	}
	if d := Decide(v1alpha1.RuntimeChecks{Checks: spec.Checks}, nil, green, after, after); d.Reason != v1alpha1.ReasonVerified {
		t.Fatalf("no soak: %+v", d)
	}
}

func TestNextDue(t *testing.T) {
	spec := v1alpha1.RuntimeChecks{Soak: metav1.Duration{Duration: time.Minute}, Checks: []v1alpha1.RuntimeCheck{
		promCheck("errors", 1), {Name: "slow", Interval: metav1.Duration{Duration: time.Hour}, HTTP: &v1alpha1.HTTPCheck{}},
		{Name: "smoke", Job: &v1alpha1.JobCheck{}},
	}}
	done := []v1alpha1.CheckStatus{
		st("errors", v1alpha1.CheckPassed, 0, t0.Add(55*time.Second)), st("slow", v1alpha1.CheckPassed, 0, t0.Add(55*time.Second)),
		st("smoke", v1alpha1.CheckPassed, 0, t0),
	}
	tests := []struct {
		name     string
		statuses []v1alpha1.CheckStatus
		now      time.Time
		want     time.Duration
	}{
		{"a check never evaluated: now (at least 1s)", nil, t0, time.Second},
		{"the smallest interval", done, t0.Add(58 * time.Second), 2 * time.Second},
		{"the soak's end comes first", done, t0.Add(56 * time.Second), 4 * time.Second},
		{"after the soak: the next interval", done, t0.Add(61 * time.Second), 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NextDue(spec, nil, tt.statuses, t0, tt.now); got != tt.want {
				t.Fatalf("NextDue = %s, want %s", got, tt.want)
			}
		})
	}
}

// unmeasurable is a check's status after an unbroken run of Unverifiable
// evaluations that began at since, the last one at at.
func unmeasurable(name string, since, at time.Time) v1alpha1.CheckStatus {
	s := st(name, v1alpha1.CheckUnverifiable, 0, at)
	s.Value, s.Message, s.UnverifiableSince = "", "query returned no samples", &metav1.Time{Time: since}
	return s
}

// TestUnverifiableAfter (issue 33): a check that cannot be measured (a
// label typo, no traffic, Prometheus unreachable) halts, reason
// CheckUnverifiable naming it, once it has been Unverifiable for its
// unverifiableAfter, by default the environment's reconcileDeadline
// (spec.deadlines.observedRevision); an explicit value wins; before the
// deadline, and without any, it waits (Unverifiable).
func TestUnverifiableAfter(t *testing.T) {
	t.Parallel()
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	env := &v1alpha1.Deadlines{ObservedRevision: d(15 * time.Minute)}
	plain := promCheck("errors", 1)
	own := promCheck("errors", 1)
	own.UnverifiableAfter = d(5 * time.Minute)
	since := t0.Add(time.Minute)
	tests := []struct {
		name   string
		check  v1alpha1.RuntimeCheck
		dl     *v1alpha1.Deadlines
		now    time.Time
		after  time.Duration
		reason string
	}{
		{"no deadline at all: waits for ever", plain, nil, since.Add(24 * time.Hour), 0, v1alpha1.ReasonUnverifiable},
		{"reconcileDeadline not passed: waits", plain, env, since.Add(14 * time.Minute), 15 * time.Minute, v1alpha1.ReasonUnverifiable},
		{"reconcileDeadline passed: halts", plain, env, since.Add(15 * time.Minute), 15 * time.Minute, v1alpha1.ReasonCheckUnverifiable},
		{"unverifiableAfter wins over a longer reconcileDeadline", own, env, since.Add(5 * time.Minute), 5 * time.Minute, v1alpha1.ReasonCheckUnverifiable},
		{"unverifiableAfter wins over a shorter reconcileDeadline", own, &v1alpha1.Deadlines{ObservedRevision: d(time.Minute)},
			since.Add(4 * time.Minute), 5 * time.Minute, v1alpha1.ReasonUnverifiable},
		{"unverifiableAfter without a reconcileDeadline", own, &v1alpha1.Deadlines{Rollout: d(time.Minute)},
			since.Add(6 * time.Minute), 5 * time.Minute, v1alpha1.ReasonCheckUnverifiable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got, _ := unverifiableAfter(tt.check, tt.dl); got != tt.after {
				t.Fatalf("UnverifiableAfter = %s, want %s", got, tt.after)
			}
			spec := v1alpha1.RuntimeChecks{Checks: []v1alpha1.RuntimeCheck{promCheck("latency", 1), tt.check}}
			statuses := []v1alpha1.CheckStatus{st("latency", v1alpha1.CheckPassed, 0, tt.now), unmeasurable("errors", since, tt.now)}
			got := Decide(spec, tt.dl, statuses, t0, tt.now)
			if got.Reason != tt.reason {
				t.Fatalf("Decide = %s %q; want %s", got.Reason, got.Message, tt.reason)
			}
			if tt.reason == v1alpha1.ReasonCheckUnverifiable && (!slices.Equal(got.Checks, []string{"errors"}) ||
				!strings.Contains(got.Message, "query returned no samples")) {
				t.Fatalf("Decide names %q (%q); want check errors and why it could not be measured", got.Checks, got.Message)
			}
			// The requeue wakes the verifier at the deadline, not later.
			if left := since.Add(tt.after).Sub(tt.now); tt.after > 0 && left > 0 {
				if next := NextDue(spec, tt.dl, statuses, t0, tt.now); next > left {
					t.Fatalf("NextDue = %s, after the deadline in %s", next, left)
				}
			}
		})
	}
	// A failure beats an unmeasurable check past its deadline.
	spec := v1alpha1.RuntimeChecks{Checks: []v1alpha1.RuntimeCheck{plain, promCheck("latency", 1)}}
	statuses := []v1alpha1.CheckStatus{unmeasurable("errors", since, since), st("latency", v1alpha1.CheckFailed, 1, since)}
	if got := Decide(spec, env, statuses, t0, since.Add(time.Hour)); got.Reason != v1alpha1.ReasonCheckFailed || !slices.Equal(got.Checks, []string{"latency"}) {
		t.Fatalf("Decide = %+v; want CheckFailed naming latency", got)
	}
}

// TestRecordUnverifiableSince: the run of Unverifiable evaluations keeps
// its start; any measured verdict ends it, and the next Unverifiable one
// starts a new run (a blip of Prometheus mid-soak is not counted from the
// soak's start).
func TestRecordUnverifiableSince(t *testing.T) {
	t.Parallel()
	c := promCheck("errors", 3)
	down := unverifiable("query returned no samples")
	s1 := Record(c, nil, down, t0)
	if s1.UnverifiableSince == nil || !s1.UnverifiableSince.Time.Equal(t0) {
		t.Fatalf("first Unverifiable: since %v, want %s", s1.UnverifiableSince, t0)
	}
	s2 := Record(c, &s1, down, t0.Add(time.Minute))
	if !s2.UnverifiableSince.Time.Equal(t0) {
		t.Fatalf("still Unverifiable: since %v, want %s", s2.UnverifiableSince, t0)
	}
	s3 := Record(c, &s2, passed("0", ""), t0.Add(2*time.Minute))
	if s3.UnverifiableSince != nil {
		t.Fatalf("a pass kept unverifiableSince %v", s3.UnverifiableSince)
	}
	s4 := Record(c, &s3, down, t0.Add(3*time.Minute))
	if !s4.UnverifiableSince.Time.Equal(t0.Add(3 * time.Minute)) {
		t.Fatalf("a new run: since %v, want %s", s4.UnverifiableSince, t0.Add(3*time.Minute))
	}
	// A status written before unverifiableSince existed counts from its
	// last evaluation.
	old := st("errors", v1alpha1.CheckUnverifiable, 0, t0)
	if s := Record(c, &old, down, t0.Add(time.Hour)); !s.UnverifiableSince.Time.Equal(t0) {
		t.Fatalf("from an old status: since %v, want %s", s.UnverifiableSince, t0)
	}
}
