package registry

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestJoinErrors(t *testing.T) {
	t.Parallel()
	unreachable := fmt.Errorf("resolve a:1: %w", ErrUnreachable)
	notFound := fmt.Errorf("resolve b:1: %w", ErrNotFound)
	invalid := fmt.Errorf("resolve C:1: %w", ErrInvalid)
	hard := errors.New("resolve d:1: unauthorized")
	for _, tc := range []struct {
		name  string
		errs  []error
		worst error
		lines int
	}{
		{"none", nil, nil, 0},
		{"one", []error{notFound}, notFound, 1},
		{"invalid over unreachable", []error{unreachable, invalid}, invalid, 3},
		{"not found over unreachable", []error{unreachable, notFound, unreachable}, notFound, 4},
		{"hard failure over all", []error{unreachable, notFound, hard, invalid}, hard, 5},
		{"first of equals", []error{notFound, invalid}, notFound, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := JoinErrors(tc.errs)
			if tc.worst == nil {
				if err != nil {
					t.Fatalf("JoinErrors(nil) = %v", err)
				}
				return
			}
			if !errors.Is(err, tc.worst) {
				t.Fatalf("%v does not unwrap to %v", err, tc.worst)
			}
			// Identity: the joined error unwraps to the very error it was given.
			if len(tc.errs) > 1 && errors.Unwrap(err) != tc.worst { //nolint:errorlint // identity, not a match in the chain
				t.Fatalf("unwraps to %v, want %v", errors.Unwrap(err), tc.worst)
			}
			msg := err.Error()
			if n := len(strings.Split(msg, "\n")); n != tc.lines {
				t.Errorf("%d lines, want %d:\n%s", n, tc.lines, msg)
			}
			for _, e := range tc.errs {
				if !strings.Contains(msg, e.Error()) {
					t.Errorf("message lacks %q:\n%s", e, msg)
				}
			}
			if len(tc.errs) > 1 && !strings.HasPrefix(msg, fmt.Sprintf("%d images not resolved:", len(tc.errs))) {
				t.Errorf("message %q", msg)
			}
		})
	}
}
