// Package environment is the environment registry of the GitOps repository:
// the environments of throughline-policy.yaml, each with the overlay paths
// of its apps, its cluster, its destination namespaces, whether it is
// protected, its approvers and its controller objects.
//
// Every command derives an environment from the overlay path it works on
// (Registry.Locate) and refuses a name, path, cluster or namespace that
// disagrees with the registry (Registry.Resolve). New checks the registry
// itself: an invalid registry is invalid input (exit 4) naming the file and
// the field. A repository whose policy declares no environment has an
// empty registry (Configured is false) and every claim passes unchecked.
//
// The package only reads the policy document it is given: it does no I/O.
package environment

// Rules of the environment refusals (exitcode.Refusal.Rule).
const (
	// RuleUnknown refuses an environment the registry does not list.
	RuleUnknown = "environment-unknown"
	// RuleMismatch refuses a path, app, cluster or namespace that the
	// registry gives to another environment (or to none).
	RuleMismatch = "environment-mismatch"
	// RuleOrder refuses a promotion from an environment the target's
	// promotesFrom does not list.
	RuleOrder = "promotion-order"
)
