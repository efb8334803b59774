package render_test

import (
	"errors"
	"testing"

	"github.com/throughline-dev/throughline/exitcode"
)

// invalidFile is the file an invalid-input error names, failing t when
// err is no *exitcode.InvalidInput.
func invalidFile(t *testing.T, err error) string {
	t.Helper()
	var in *exitcode.InvalidInput
	if !errors.As(err, &in) {
		t.Fatalf("not invalid input: %T %v", err, err)
	}
	return in.File
}
