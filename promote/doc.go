// Package promote is the promotion operations on the GitOps repository:
// propose (write an accepted digest into the next environment's overlay
// with a CANDIDATE record, on an attempt branch), verify, approve and
// reconcile (the record's transitions, committed by compare-and-swap), and
// rollback proposals (a digest the environment accepted before, proposed
// through the same path). What a pull request may change is package
// gate's to judge; promote asks gate's judgements before it writes, so
// that it never writes what the gate would refuse.
//
// It reads records only with promotion.ReadRecord and runs git only
// through packages gitops and gitrepo. Refusals are *exitcode.Refusal
// (exit 3); invalid records, policies and manifests *exitcode.InvalidInput
// (exit 4). It never logs.
package promote

// Rules of the promote refusals (exitcode.Refusal.Rule).
const (
	// RulePromotion refuses a proposal or transition the records do not
	// back (nothing accepted in the source, another digest, no record).
	RulePromotion = "promotion"
	// RuleTransition refuses a transition the state machine does not allow.
	RuleTransition = "record-transition"
	// RuleApproval refuses reconciling a record whose approval is void.
	RuleApproval = "approval"
	// RuleRollbackTarget refuses a rollback target (see rollback.RuleTarget).
	RuleRollbackTarget = "rollback-target"
)
