package runtimecheck

import (
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
			d := Decide(spec, tt.statuses, t0, tt.now)
			if d.Reason != tt.reason || !strings.Contains(d.Message, tt.msg) {
				t.Fatalf("got %s %q; want %s containing %q", d.Reason, d.Message, tt.reason, tt.msg)
			}
		})
	}
	if d := Decide(v1alpha1.RuntimeChecks{Checks: spec.Checks}, green, after, after); d.Reason != v1alpha1.ReasonVerified {
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
			if got := NextDue(spec, tt.statuses, t0, tt.now); got != tt.want {
				t.Fatalf("NextDue = %s, want %s", got, tt.want)
			}
		})
	}
}
