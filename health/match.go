package health

import (
	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// Outcome is the verdict on one container, one workload or one Acceptance:
// the API's v1alpha1.Outcome, which status carries.
type Outcome = v1alpha1.Outcome

// Outcomes, from best to worst for aggregation (see [Worse]); the
// v1alpha1.Outcome values under the engine's short names.
const (
	// Verified: the running image is the declared one.
	Verified = v1alpha1.OutcomeVerified
	// Pending: not decided yet (rollout in progress, no imageID reported).
	Pending = v1alpha1.OutcomePending
	// Unverifiable: the declared digest could not be resolved (registry
	// unreachable, digest unknown, node platform unknown). Never Verified.
	Unverifiable = v1alpha1.OutcomeUnverifiable
	// Mismatch: the running image is not the declared one.
	Mismatch = v1alpha1.OutcomeMismatch
)

func rank(o Outcome) int {
	switch o {
	case Verified:
		return 0
	case Pending:
		return 1
	case Unverifiable:
		return 2
	case Mismatch:
		return 3
	}
	return 4
}

// Worse returns the worse of two outcomes: Mismatch over Unverifiable over
// Pending over Verified.
func Worse(a, b Outcome) Outcome {
	if rank(b) > rank(a) {
		return b
	}
	return a
}

func orNone(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}
