package main

import (
	"io"

	"github.com/throughline-dev/throughline/internal/cli"
)

// exitCode maps an error to its exit code (package exitcode) and writes it
// to stderr in the form that reads best: a refusal lists every violation
// (cli.ExitCode, shared with throughline-cmp-render).
func exitCode(err error, stderr io.Writer) int { return cli.ExitCode(err, stderr) }
