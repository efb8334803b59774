// Package exitcode is the exit-code contract of every throughline command
// (README "Exit codes", docs/concepts.md) and the error kinds through which a library chooses one:
//
//	0 ok, 1 internal or I/O failure, 2 usage, 3 refused by policy or a gate,
//	4 invalid input, 5 not decided yet (pending or unverifiable: try again).
//
// A library returns a *Refusal, *InvalidInput, *Pending or *Usage (or its own
// type implementing [Coder]), wrapped as deep as it likes; the command maps
// the chain with [Code]. The package imports nothing of throughline, so any
// package can return into it.
package exitcode

import (
	"errors"
	"fmt"
	"strings"
)

// The exit codes.
const (
	OK       = 0
	Internal = 1
	Usage    = 2
	Refused  = 3
	Invalid  = 4
	Pending  = 5
)

// Sentinels for errors.Is: every error of the kind matches its sentinel.
var (
	ErrRefused = errors.New("refused")
	ErrInvalid = errors.New("invalid input")
	ErrPending = errors.New("not decided")
	ErrUsage   = errors.New("usage error")
)

// Coder is an error that chooses its exit code.
type Coder interface {
	error
	ExitCode() int
}

// precedence: when a chain holds several kinds, the first of these wins
// (a refusal found while reading input is still a refusal).
var precedence = []int{Refused, Pending, Usage, Invalid}

// Code is the exit code for err: OK for nil; else the kind found in err's
// chain (errors.Unwrap and errors.Join trees), by precedence Refused,
// Pending, Usage, Invalid; Internal when there is none.
func Code(err error) int {
	if err == nil {
		return OK
	}
	found := map[int]bool{}
	walk(err, func(e error) {
		if c, ok := e.(Coder); ok { //nolint:errorlint // walk visits every error of the tree itself
			found[c.ExitCode()] = true
		}
	})
	for _, c := range precedence {
		if found[c] {
			return c
		}
	}
	return Internal
}

func walk(err error, visit func(error)) {
	if err == nil {
		return
	}
	visit(err)
	switch u := err.(type) { //nolint:errorlint // this is the walk of the tree: each node's own Unwrap
	case interface{ Unwrap() error }:
		walk(u.Unwrap(), visit)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, visit)
		}
	}
}

// Refusal is a gate's or a rule's refusal (exit 3). Rule names the rule in
// kebab-case ("record-transition", "rollback-target"); File, Object and
// Field say where, when known; Reason says what is wrong; Err is the cause,
// when another error is.
type Refusal struct {
	Rule   string
	File   string
	Object string
	Field  string
	Reason string
	Err    error
}

// Refuse is a Refusal of rule with a formatted reason.
func Refuse(rule, format string, args ...any) *Refusal {
	return &Refusal{Rule: rule, Reason: fmt.Sprintf(format, args...)}
}

// RefuseErr turns err into a Refusal of rule (nil stays nil): for a check
// whose error is, by its nature, a refusal (a state transition the machine
// does not allow, say).
func RefuseErr(rule string, err error) error {
	if err == nil {
		return nil
	}
	return &Refusal{Rule: rule, Err: err}
}

func (r *Refusal) Error() string {
	var parts []string
	for _, s := range []string{r.File, r.Object, r.Field} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if r.Reason != "" {
		parts = append(parts, r.Reason)
	}
	if r.Err != nil {
		parts = append(parts, r.Err.Error())
	}
	if len(parts) == 0 {
		return "refused by rule " + r.Rule
	}
	return strings.Join(parts, ": ")
}

// Unwrap is the cause.
func (r *Refusal) Unwrap() error { return r.Err }

// Is matches ErrRefused.
func (r *Refusal) Is(target error) bool { return target == ErrRefused }

// ExitCode is Refused.
func (r *Refusal) ExitCode() int { return Refused }

// InvalidInput is input that cannot be used (exit 4): an unparseable or
// oversized file, a record that breaks its schema, a path outside the
// repository root. File names the offending file (relative to the
// repository root) when one is known.
type InvalidInput struct {
	File string
	Err  error
}

// InvalidFile is an InvalidInput for file.
func InvalidFile(file string, err error) *InvalidInput { return &InvalidInput{File: file, Err: err} }

func (e *InvalidInput) Error() string {
	if e.File == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

// Unwrap is the cause.
func (e *InvalidInput) Unwrap() error { return e.Err }

// Is matches ErrInvalid.
func (e *InvalidInput) Is(target error) bool { return target == ErrInvalid }

// ExitCode is Invalid.
func (e *InvalidInput) ExitCode() int { return Invalid }

// PendingError is "not decided yet" (exit 5): a registry, a cluster or a
// remote that could not be asked, a rollout still going; try again.
type PendingError struct{ Err error }

// NotDecided is a PendingError with cause err.
func NotDecided(err error) *PendingError { return &PendingError{Err: err} }

func (e *PendingError) Error() string { return "not decided (try again): " + e.Err.Error() }

// Unwrap is the cause.
func (e *PendingError) Unwrap() error { return e.Err }

// Is matches ErrPending.
func (e *PendingError) Is(target error) bool { return target == ErrPending }

// ExitCode is Pending.
func (e *PendingError) ExitCode() int { return Pending }

// UsageError is a wrong invocation (exit 2): a missing or malformed flag.
type UsageError struct{ Err error }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, args ...any) *UsageError {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap is the cause.
func (e *UsageError) Unwrap() error { return e.Err }

// Is matches ErrUsage.
func (e *UsageError) Is(target error) bool { return target == ErrUsage }

// ExitCode is Usage.
func (e *UsageError) ExitCode() int { return Usage }

// Refusals are the refusals of err's tree (errors.Unwrap and errors.Join),
// outermost first, not looking inside a refusal: every refusal a gate that
// reports all it found joined, however wrapped.
func Refusals(err error) []*Refusal {
	switch u := err.(type) { //nolint:errorlint // the walk of the tree: each node's own Unwrap
	case nil:
		return nil
	case *Refusal:
		return []*Refusal{u}
	case interface{ Unwrap() []error }:
		var out []*Refusal
		for _, e := range u.Unwrap() {
			out = append(out, Refusals(e)...)
		}
		return out
	case interface{ Unwrap() error }:
		return Refusals(u.Unwrap())
	}
	return nil
}
