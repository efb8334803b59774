package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
)

// Exit codes of every command (DESIGN.md §4).
const (
	exitOK       = 0
	exitInternal = 1
	exitUsage    = 2
	exitRefused  = 3
	exitInvalid  = 4
	exitPending  = 5
)

// usageError marks a wrong invocation (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// pendingError is "not decided yet": the registry could not be asked (exit 5
// once exit.go maps it; until then it exits 1).
type pendingError struct{ err error }

func (e *pendingError) Error() string { return "not decided (try again): " + e.err.Error() }
func (e *pendingError) Unwrap() error { return e.err }

// refusedError marks a gate refusal that is not a policy violation list
// (a stale Acceptance, say): exit 3.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

// exitCode maps an error to its exit code and writes it to stderr in the
// form that reads best: a refusal lists every violation.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var refusal *policy.Refusal
	var refused *refusedError
	var usage *usageError
	var input *render.InputError
	var pending *pendingError
	switch {
	case errors.As(err, &refusal):
		fmt.Fprintln(stderr, refusal.Error())
		return exitRefused
	case errors.As(err, &refused):
		fmt.Fprintln(stderr, "refused:", refused.Error())
		return exitRefused
	case errors.As(err, &pending):
		fmt.Fprintln(stderr, "not decided:", err)
		return exitPending
	case errors.As(err, &usage):
		fmt.Fprintln(stderr, "usage error:", err)
		return exitUsage
	case errors.As(err, &input):
		fmt.Fprintln(stderr, "invalid input:", err)
		return exitInvalid
	default:
		fmt.Fprintln(stderr, "error:", err)
		return exitInternal
	}
}
