package checkfile

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
)

// File is the declaration file's name in an app's overlay directory (a
// plain-directory render skips it: it is no manifest).
const File = render.ChecksFile

// Kind is the file's kind (apiVersion v1alpha1.APIVersion).
const Kind = "RuntimeChecks"

// Limits a file is held to: the verifier runs every check of every app, so
// a file cannot ask for unbounded work.
const (
	MaxChecks      = 32
	MaxQueryLength = 4096
	MaxPathLength  = 2048
	MaxBodyMatch   = 1024
	MaxJobArgs     = 64
	// MinInterval is the shortest interval between two evaluations.
	MinInterval = "1s"
)

// RuleCheckNamespace refuses an HTTP check whose Service is in a namespace
// the app does not own: neither the Acceptance's nor one the environment
// registry binds to the app (runtimecheck refuses it at run time with the
// same id).
const RuleCheckNamespace policy.Rule = "check-namespace"

// QueryParser checks a PromQL query; its error says where the query is
// malformed.
type QueryParser func(query string) error

// Options says what a file is judged against.
type Options struct {
	// Environment is the environment's registry entry (nil without a
	// registry, or for an environment it does not list).
	Environment *environment.Environment
	// App is the app's name: with Environment, a probe may name a
	// namespace the registry binds to it (environment.BindsNamespace).
	App string
	// Namespace is the app's namespace (the Acceptance's), a probe's
	// namespace when it names none, and the only one it may name without
	// a binding (empty: unknown, so a probe may name none).
	Namespace string
	// AnyNamespace skips RuleCheckNamespace, for a reader that never
	// probes and needs only the checks' names and soak (the promotion
	// gate's checks-not-passed rule); the render and the verifier never
	// set it.
	AnyNamespace bool
	// ParseQuery checks PromQL; nil means LexQuery.
	ParseQuery QueryParser
}

// FieldError is a field of the file that is wrong; Field is its path
// (checks[1].prometheus.threshold), empty for the document itself.
type FieldError struct {
	Field string
	Err   error
}

// Error names the field, then what is wrong with it.
func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Err.Error()
	}
	return e.Field + ": " + e.Err.Error()
}

// Unwrap is the cause.
func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Parse decodes and judges the file's content data (file names it in
// errors). Bad input is a *exitcode.InvalidInput naming file whose cause is
// a *FieldError; a Job image not pinned by digest is a *policy.Refusal.
func Parse(file string, data []byte, opts Options) (*v1alpha1.RuntimeChecks, error) {
	if opts.ParseQuery == nil {
		opts.ParseQuery = LexQuery
	}
	rc, err := decode(data)
	if err == nil {
		err = validate(file, rc, opts)
	}
	if err != nil {
		if exitcode.Code(err) == exitcode.Invalid || exitcode.Code(err) == exitcode.Internal {
			var fe *FieldError
			if !errors.As(err, &fe) {
				err = &FieldError{Err: err}
			}
			return nil, exitcode.InvalidFile(file, err)
		}
		return nil, err
	}
	return rc, nil
}

// Read reads File in the directory dir (slash path relative to the root of
// fsys) through the confined filesystem and parses it: nil when the
// directory has none.
func Read(fsys *render.ConfinedFS, dir string, opts Options) (*v1alpha1.RuntimeChecks, error) {
	rel := path.Join(dir, File)
	data, err := fsys.ReadFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return Parse(rel, data, opts)
}
