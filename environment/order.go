package environment

import (
	"fmt"
	"slices"

	"github.com/throughline-dev/throughline/exitcode"
)

// First reports whether e is a first environment: one that no other
// environment's artifacts are promoted into (its promotesFrom is empty),
// where a candidate comes from CI (promote candidate).
func (e *Environment) First() bool { return len(e.PromotesFrom) == 0 }

// CheckOrder refuses (rule promotion-order) a promotion into the
// environment to from the environment from when to declares its sources
// (promotesFrom) and from is not one of them. An environment that declares
// none takes promotions as before the order existed.
func (r *Registry) CheckOrder(from, to string) error {
	e, ok := r.Get(to)
	if !ok || e.First() || slices.Contains(e.PromotesFrom, from) {
		return nil
	}
	return &exitcode.Refusal{Rule: RuleOrder, File: r.File(), Field: "environments." + to + ".promotesFrom",
		Reason: fmt.Sprintf("%s: %s is promoted into from %v only, not from %s", RuleOrder, to, e.PromotesFrom, from)}
}

// checkOrder checks the promotion order: every promotesFrom entry is
// another environment of r, listed once.
func (r *Registry) checkOrder() error {
	for _, name := range r.names {
		from := r.envs[name].PromotesFrom
		for i, src := range from {
			field := fmt.Sprintf("environments.%s.promotesFrom[%d]", name, i)
			switch _, ok := r.envs[src]; {
			case src == name:
				return fmt.Errorf("%s: %q is the environment itself", field, src)
			case !ok:
				return fmt.Errorf("%s: %q is not an environment of the registry (%s)", field, src, r.list())
			case slices.Index(from, src) < i:
				return fmt.Errorf("%s: %q is listed twice", field, src)
			}
		}
	}
	return nil
}
