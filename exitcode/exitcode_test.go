package exitcode

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// policyLike is a library's own refusal type (policy.Refusal is one).
type policyLike struct{}

func (policyLike) Error() string { return "refused by policy" }
func (policyLike) ExitCode() int { return Refused }

func TestCode(t *testing.T) {
	t.Parallel()
	refusal := Refuse("record-transition", "APPROVED -> CANDIDATE is not a transition")
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, OK},
		{"plain", errors.New("disk full"), Internal},
		{"I/O wrapped", fmt.Errorf("reading x: %w", fs.ErrNotExist), Internal},
		{"refusal", refusal, Refused},
		{"wrapped refusal", fmt.Errorf("promotion p: %w", refusal), Refused},
		{"library's own coder", fmt.Errorf("render: %w", policyLike{}), Refused},
		{"invalid", InvalidFile("a.yaml", errors.New("bad")), Invalid},
		{"pending", NotDecided(errors.New("registry down")), Pending},
		{"usage", Usagef("--app is required"), Usage},
		{"refusal beats invalid", InvalidFile("a.yaml", refusal), Refused},
		{"pending beats invalid", InvalidFile("a.yaml", NotDecided(errors.New("x"))), Pending},
		{"joined", errors.Join(errors.New("x"), InvalidFile("b.yaml", errors.New("y"))), Invalid},
		{"joined refusal", errors.Join(InvalidFile("b.yaml", errors.New("y")), refusal), Refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Code(tc.err); got != tc.want {
				t.Errorf("Code(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestIsAndAs(t *testing.T) {
	t.Parallel()
	cause := errors.New("the cause")
	r := &Refusal{Rule: "digest", File: "promotion/a/prod.yaml", Field: "artifact.digest", Reason: "not the verified one", Err: cause}
	err := fmt.Errorf("check: %w", r)
	if !errors.Is(err, ErrRefused) || errors.Is(err, ErrInvalid) {
		t.Errorf("errors.Is: refused %v invalid %v", errors.Is(err, ErrRefused), errors.Is(err, ErrInvalid))
	}
	if !errors.Is(err, cause) {
		t.Error("the cause is not reachable through Unwrap")
	}
	var got *Refusal
	if !errors.As(err, &got) || got.Rule != "digest" {
		t.Fatalf("errors.As: %v", got)
	}
	if want := "promotion/a/prod.yaml: artifact.digest: not the verified one: the cause"; r.Error() != want {
		t.Errorf("Error() = %q, want %q", r.Error(), want)
	}
	if RefuseErr("x", nil) != nil {
		t.Error("RefuseErr(nil) is not nil")
	}
	for _, e := range []error{InvalidFile("f", cause), NotDecided(cause), &UsageError{cause}} {
		if !errors.Is(e, cause) {
			t.Errorf("%T does not unwrap to its cause", e)
		}
	}
	if !errors.Is(InvalidFile("f", cause), ErrInvalid) || !errors.Is(NotDecided(cause), ErrPending) || !errors.Is(Usagef("x"), ErrUsage) {
		t.Error("a kind does not match its sentinel")
	}
}
