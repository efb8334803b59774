package environment

import (
	"errors"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
)

// wantInvalid fails t unless err is invalid input (exit 4) naming file; a
// field it names is in its message (the golden files).
func wantInvalid(t *testing.T, err error) {
	t.Helper()
	var in *exitcode.InvalidInput
	if !errors.As(err, &in) || exitcode.Code(err) != exitcode.Invalid || in.File != file {
		t.Fatalf("exit %d: %v, want invalid input naming %s", exitcode.Code(err), err, file)
	}
}

// wantRefusal fails t unless err is a refusal (exit 3) naming file and
// returns it.
func wantRefusal(t *testing.T, err error) *exitcode.Refusal {
	t.Helper()
	var re *exitcode.Refusal
	if !errors.As(err, &re) || exitcode.Code(err) != exitcode.Refused || re.File != file {
		t.Fatalf("exit %d: %v, want a refusal naming %s", exitcode.Code(err), err, file)
	}
	return re
}
