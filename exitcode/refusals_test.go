package exitcode_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
)

// TestRefusals: every refusal of a joined, wrapped tree, outermost first,
// none from inside a refusal, none from a plain error.
func TestRefusals(t *testing.T) {
	t.Parallel()
	a, b := &exitcode.Refusal{Rule: "a"}, &exitcode.Refusal{Rule: "b", Err: &exitcode.Refusal{Rule: "inner"}}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"a plain error", errors.New("x"), ""},
		{"one, wrapped", fmt.Errorf("checking: %w", a), "a"},
		{"joined, one wrapped", errors.Join(a, fmt.Errorf("w: %w", b), errors.New("x")), "a b"},
		{"joined inside a wrap", fmt.Errorf("w: %w", errors.Join(b, a)), "b a"},
	} {
		var got []string
		for _, r := range exitcode.Refusals(tc.err) {
			got = append(got, r.Rule)
		}
		if fmt.Sprint(got) != fmt.Sprint(strings.Fields(tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, got, tc.want)
		}
	}
}
