package gate

import (
	"fmt"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/promotion"
)

// RuleAttemptInFlight refuses a new attempt that would replace, on the
// base branch, the record of an attempt still in flight.
const RuleAttemptInFlight = "attempt-in-flight"

// inFlight refuses next, a record of app in env, when it would replace
// onBase, the record on the base branch, while that attempt is in flight:
// merged (APPROVED) or RECONCILING, not yet ACCEPTED, HALTED or REJECTED.
// One attempt is in flight per app and environment: replacing its record
// would lose its outcome (the notifier judges the record it finds, and the
// in-flight attempt would end with no decision). The way out is to wait
// for it (the notifier halts it after the environment's reconcileDeadline)
// or to end it explicitly first, REJECTED on the base branch with a
// reason. The same attempt moving on (same attempt key) is no replacement.
func inFlight(onBase, next *promotion.Record) error {
	if onBase == nil || next == nil || onBase.Key() == next.Key() {
		return nil
	}
	if onBase.State != promotion.Approved && onBase.State != promotion.Reconciling {
		return nil
	}
	since := ""
	if n := len(onBase.History); n > 0 {
		since = " since " + onBase.History[n-1].At.UTC().Format(time.RFC3339)
	}
	env := onBase.Target.Environment
	return &exitcode.Refusal{Rule: RuleAttemptInFlight, File: promotion.RecordPath(onBase.App, env), Field: "state",
		Reason: fmt.Sprintf("one attempt in flight per app and environment: %s (%s) is %s on the base branch%s, and %s would replace "+
			"its record; wait until it is ACCEPTED or HALTED (the notifier halts it after reconcileDeadline), or end it first: "+
			"throughline promote reject --app %s --to %s --branch <base branch> --reason TEXT",
			onBase.PromotionID, onBase.Artifact.Digest, onBase.State, since, next.PromotionID, onBase.App, env)}
}
