package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Reasons of the Ready condition for runtime checks (issue 20). The images
// are verified first; then every declared check must stay green for the
// soak time before Ready turns True.
const (
	// ReasonSoaking: the images are verified and the checks are green, but
	// the soak time has not passed yet (Ready Unknown, Reconciling True).
	ReasonSoaking = "Soaking"
	// ReasonCheckFailed: a check failed FailureThreshold times in a row
	// (Ready False, Stalled True: kstatus Failed, Argo CD Degraded).
	ReasonCheckFailed = "CheckFailed"
	// ReasonCheckUnverifiable: a check stayed Unverifiable (could not be
	// measured: no sample, Prometheus unreachable, a Job not created) longer
	// than its unverifiableAfter, by default the environment's
	// reconcileDeadline (spec.deadlines.observedRevision). Ready False,
	// Stalled True: kstatus Failed, Argo CD Degraded, the notifier HALTs
	// with class runtime. Final for the generation, like CheckFailed.
	ReasonCheckUnverifiable = "CheckUnverifiable"
	// ReasonDeadlineExceeded: the rollout did not verify within
	// spec.deadlines.rollout (Ready False, Stalled True).
	ReasonDeadlineExceeded = "DeadlineExceeded"
)

// Deadlines are an environment's deadlines, copied by the render from the
// environment registry (throughline-policy.yaml) so that the verifier and
// the rendered hash see them.
type Deadlines struct {
	// Rollout is how long, from the generation's first observation, the
	// running images may take to be verified before Ready turns False with
	// reason DeadlineExceeded.
	Rollout *metav1.Duration `json:"rollout,omitempty"`
	// ObservedRevision is how long after the merge the controller may take to
	// report the desired revision (the environment's reconcileDeadline).
	ObservedRevision *metav1.Duration `json:"observedRevision,omitempty"`
}

// RuntimeChecks are the runtime checks declared for an app in an
// environment (the overlay's throughline-checks.yaml), evaluated by the
// verifier after the running images are verified.
type RuntimeChecks struct {
	// Soak is how long every check must stay green after the images are
	// verified before Ready turns True. Zero means Ready turns True at the
	// first round in which every check passed.
	Soak metav1.Duration `json:"soak,omitempty"`
	// Checks are evaluated in order, each on its own interval.
	Checks []RuntimeCheck `json:"checks"`
}

// RuntimeCheck is one check. Exactly one of Prometheus, HTTP and Job is set.
type RuntimeCheck struct {
	// Name is unique among the app's checks (DNS label).
	Name string `json:"name"`
	// Interval between evaluations; zero means 30s.
	Interval metav1.Duration `json:"interval,omitempty"`
	// FailureThreshold is how many consecutive failures halt; zero means 1.
	FailureThreshold int32 `json:"failureThreshold,omitempty"`
	// UnverifiableAfter is how long the check may stay Unverifiable (not
	// measurable), counted from the first evaluation of an unbroken run of
	// Unverifiable ones (CheckStatus.UnverifiableSince), before Ready turns
	// False with reason CheckUnverifiable. Unset or zero means the environment's
	// reconcileDeadline (spec.deadlines.observedRevision); with neither, an
	// unmeasurable check waits for ever. A pointer, so that a check
	// without it renders as before (the rendered Acceptance unchanged).
	UnverifiableAfter *metav1.Duration `json:"unverifiableAfter,omitempty"`

	Prometheus *PrometheusCheck `json:"prometheus,omitempty"`
	HTTP       *HTTPCheck       `json:"http,omitempty"`
	Job        *JobCheck        `json:"job,omitempty"`
}

// Comparison compares a measured value with a threshold: the check passes
// when "value Op threshold" holds.
type Comparison string

// Comparisons.
const (
	ComparisonLess         Comparison = "<"
	ComparisonLessEqual    Comparison = "<="
	ComparisonGreater      Comparison = ">"
	ComparisonGreaterEqual Comparison = ">="
	ComparisonEqual        Comparison = "=="
	ComparisonNotEqual     Comparison = "!="
)

// PrometheusCheck is a PromQL instant query that must return exactly one
// sample (a scalar, or a vector of one element). The Prometheus server and
// its credentials are the verifier's configuration, never the repository's.
type PrometheusCheck struct {
	Query     string     `json:"query"`
	Op        Comparison `json:"op"`
	Threshold float64    `json:"threshold"`
}

// ServiceReference names a port of a Service in the cluster.
type ServiceReference struct {
	// Namespace defaults to the Acceptance's namespace; it must be one the
	// environment owns.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Port is the Service port, by number.
	Port int32 `json:"port"`
}

// HTTPCheck is an HTTP GET against an in-cluster Service (never an
// arbitrary URL).
type HTTPCheck struct {
	Service ServiceReference `json:"service"`
	// Path is the request path, starting with "/".
	Path string `json:"path"`
	// ExpectStatus is the status that passes; zero means 200.
	ExpectStatus int32 `json:"expectStatus,omitempty"`
	// BodyMatch is an RE2 regular expression the body (first 64 KiB) must
	// match; empty means any body.
	BodyMatch string `json:"bodyMatch,omitempty"`
	// MaxLatency fails a response slower than this; zero means the interval.
	MaxLatency metav1.Duration `json:"maxLatency,omitempty"`
}

// JobCheck is a smoke test run as a Kubernetes Job in the Acceptance's
// namespace; it passes when the Job completes within Deadline. Its image is
// subject to the pin rule like any rendered image.
type JobCheck struct {
	Image              string   `json:"image"`
	Command            []string `json:"command,omitempty"`
	Args               []string `json:"args,omitempty"`
	ServiceAccountName string   `json:"serviceAccountName,omitempty"`
	// Deadline is the Job's activeDeadlineSeconds; zero means 5m.
	Deadline metav1.Duration `json:"deadline,omitempty"`
}

// CheckVerdict is the verdict of one check evaluation.
type CheckVerdict string

// Check verdicts.
const (
	CheckPending      CheckVerdict = "Pending"
	CheckPassed       CheckVerdict = "Passed"
	CheckFailed       CheckVerdict = "Failed"
	CheckUnverifiable CheckVerdict = "Unverifiable"
)

// CheckStatus is one check's last evaluation, written by the verifier.
type CheckStatus struct {
	Name    string       `json:"name"`
	Verdict CheckVerdict `json:"verdict"`
	// Value is what was measured, as text (the query's value, "503 in 12ms",
	// "Job complete").
	Value string `json:"value,omitempty"`
	// ConsecutiveFailures counts failures since the last pass.
	ConsecutiveFailures int32       `json:"consecutiveFailures,omitempty"`
	LastEvaluated       metav1.Time `json:"lastEvaluated"`
	Message             string      `json:"message,omitempty"`
	// UnverifiableSince is when the check's current run of Unverifiable
	// evaluations began (absent unless the verdict is Unverifiable): the
	// start of its unverifiableAfter.
	UnverifiableSince *metav1.Time `json:"unverifiableSince,omitempty"`
}
