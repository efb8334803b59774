package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/pluginclient"
	"github.com/throughline-dev/throughline/policy"
)

// ExitCode maps an error to its exit code (package exitcode) and writes it
// to stderr in the form that reads best: a refusal lists every violation.
func ExitCode(err error, stderr io.Writer) int {
	var printed *pluginclient.PrintedError
	if errors.As(err, &printed) {
		_, _ = io.WriteString(stderr, printed.Stderr)
		return printed.Code
	}
	code := exitcode.Code(err)
	var violations *policy.Refusal
	switch {
	case code == exitcode.OK:
	case code == exitcode.Refused && errors.As(err, &violations):
		fmt.Fprintln(stderr, violations.Error())
	case code == exitcode.Refused:
		fmt.Fprintln(stderr, "refused:", err)
	case code == exitcode.Pending:
		fmt.Fprintln(stderr, "not decided:", err)
	case code == exitcode.Usage:
		fmt.Fprintln(stderr, "usage error:", err)
	case code == exitcode.Invalid:
		fmt.Fprintln(stderr, "invalid input:", err)
	default:
		fmt.Fprintln(stderr, "error:", err)
	}
	return code
}
