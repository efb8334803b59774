package evidence

import (
	"fmt"
	"strconv"
	"time"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// ClassRuntime is the failure class of a HALTED decision a runtime check
// caused (the Acceptance's Ready reason CheckFailed). The classes of
// evidence are source, render, live and runtime.
const ClassRuntime = "runtime"

// Kinds of check.
const (
	KindPrometheus = "prometheus"
	KindHTTP       = "http"
	KindJob        = "job"
)

// Check is one runtime check the Acceptance declared and its last
// evaluation by the verifier: what was measured, against what, when.
type Check struct {
	Name string `json:"name"`
	// Kind is prometheus, http or job.
	Kind string `json:"kind"`
	// Query is a prometheus check's PromQL.
	Query string `json:"query,omitempty"`
	// Service (namespace/name:port) and Path are an http check's probe.
	Service string `json:"service,omitempty"`
	Path    string `json:"path,omitempty"`
	// Image is a job check's image (pinned by digest).
	Image string `json:"image,omitempty"`
	// Op and Threshold are a prometheus check's comparison (value Op
	// Threshold passes).
	Op        string   `json:"op,omitempty"`
	Threshold *float64 `json:"threshold,omitempty"`
	// Value is the last value measured, Verdict the last verdict (Pending
	// when never evaluated), EvaluatedAt when.
	Value               string     `json:"value,omitempty"`
	Verdict             string     `json:"verdict"`
	ConsecutiveFailures int32      `json:"consecutiveFailures,omitempty"`
	EvaluatedAt         *time.Time `json:"evaluatedAt,omitempty"`
	Message             string     `json:"message,omitempty"`
}

// String is the check as a HALTED reason names it: name, what it measures
// and its value.
func (c Check) String() string {
	s := c.Name + " (" + c.Kind
	switch c.Kind {
	case KindPrometheus:
		s += " " + strconv.Quote(c.Query)
		if c.Threshold != nil {
			s += " " + c.Op + " " + strconv.FormatFloat(*c.Threshold, 'g', -1, 64)
		}
	case KindHTTP:
		s += " " + c.Service + c.Path
	case KindJob:
		s += " " + c.Image
	}
	s += ") is " + c.Verdict
	if c.Value != "" {
		s += " with value " + c.Value
	}
	if c.Message != "" {
		s += ": " + c.Message
	}
	return s
}

// Checks joins an Acceptance's declared checks (spec) with their last
// evaluations (status), in the declared order; a check the status does
// not list is Pending.
func Checks(spec *v1alpha1.RuntimeChecks, status []v1alpha1.CheckStatus) []Check {
	if spec == nil {
		return nil
	}
	byName := map[string]v1alpha1.CheckStatus{}
	for _, s := range status {
		byName[s.Name] = s
	}
	out := make([]Check, 0, len(spec.Checks))
	for _, d := range spec.Checks {
		c := Check{Name: d.Name, Verdict: string(v1alpha1.CheckPending)}
		switch {
		case d.Prometheus != nil:
			th := d.Prometheus.Threshold
			c.Kind, c.Query, c.Op, c.Threshold = KindPrometheus, d.Prometheus.Query, string(d.Prometheus.Op), &th
		case d.HTTP != nil:
			c.Kind, c.Service, c.Path = KindHTTP, fmt.Sprintf("%s/%s:%d", d.HTTP.Service.Namespace, d.HTTP.Service.Name, d.HTTP.Service.Port), d.HTTP.Path
		case d.Job != nil:
			c.Kind, c.Image = KindJob, d.Job.Image
		}
		if s, ok := byName[d.Name]; ok {
			c.Value, c.Verdict, c.ConsecutiveFailures, c.Message = s.Value, string(s.Verdict), s.ConsecutiveFailures, s.Message
			if !s.LastEvaluated.IsZero() {
				t := s.LastEvaluated.UTC()
				c.EvaluatedAt = &t
			}
		}
		out = append(out, c)
	}
	return out
}

// validateChecks checks the checks of r: named once each, of a known kind
// and verdict.
func (r *Record) validateChecks() error {
	seen := map[string]bool{}
	for i, c := range r.Checks {
		f := fmt.Sprintf("checks[%d]", i)
		switch {
		case c.Name == "" || seen[c.Name]:
			return fmt.Errorf("%s.name: %q empty or named twice", f, c.Name)
		case c.Kind != KindPrometheus && c.Kind != KindHTTP && c.Kind != KindJob:
			return fmt.Errorf("%s.kind: %q, want prometheus, http or job", f, c.Kind)
		case !knownVerdict(c.Verdict):
			return fmt.Errorf("%s.verdict: %q, want Pending, Passed, Failed or Unverifiable", f, c.Verdict)
		}
		seen[c.Name] = true
	}
	if r.Soak != "" {
		if d, err := time.ParseDuration(r.Soak); err != nil || d < 0 {
			return fmt.Errorf("soak: %q is not a duration", r.Soak)
		}
	}
	return nil
}

func knownVerdict(v string) bool {
	switch v1alpha1.CheckVerdict(v) {
	case v1alpha1.CheckPending, v1alpha1.CheckPassed, v1alpha1.CheckFailed, v1alpha1.CheckUnverifiable:
		return true
	}
	return false
}

// SoakCompleted reports whether the record shows its checks' soak done:
// the soak started and the verification came at least Soak later.
func (r *Record) SoakCompleted() bool {
	soak, err := time.ParseDuration(r.Soak)
	if r.Soak == "" {
		soak, err = 0, nil
	}
	return err == nil && r.SoakStartedAt != nil && r.VerifiedAt != nil && !r.VerifiedAt.Before(r.SoakStartedAt.Add(soak))
}
