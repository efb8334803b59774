package cmp_test

import (
	"errors"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/policy"
)

// finding is where a typed error of a render says it is: its rule (empty
// for invalid input), file and field (empty for invalid input, whose field
// is in its message: the golden files hold that).
type finding struct{ rule, file, field string }

// findingOf reads the finding of err: a policy refusal of one violation,
// an exitcode.Refusal or an exitcode.InvalidInput.
func findingOf(t *testing.T, err error) finding {
	t.Helper()
	var pr *policy.Refusal
	if errors.As(err, &pr) {
		if len(pr.Violations) != 1 {
			t.Fatalf("%d violations, want 1: %v", len(pr.Violations), err)
		}
		v := pr.Violations[0]
		return finding{string(v.Rule), v.File, v.Field}
	}
	var r *exitcode.Refusal
	if errors.As(err, &r) {
		return finding{r.Rule, r.File, r.Field}
	}
	var in *exitcode.InvalidInput
	if errors.As(err, &in) {
		return finding{"", in.File, ""}
	}
	t.Fatalf("not a typed finding: %v", err)
	return finding{}
}
