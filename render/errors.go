package render

import (
	"errors"
	"fmt"
)

// InputError reports input that cannot be rendered: an unparseable or
// oversized file, a path outside the repository root, a kustomization krusty
// refuses. File names the offending file (relative to the repository root)
// when one is known.
type InputError struct {
	File string
	Err  error
}

func (e *InputError) Error() string {
	if e.File == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

// ErrOutsideRoot is wrapped by every refusal to touch a path that resolves
// outside the repository root.
var ErrOutsideRoot = errors.New("path resolves outside the repository root")

// ErrTooLarge is wrapped when a file exceeds the size cap.
var ErrTooLarge = errors.New("file exceeds the size limit")

// ErrReadOnly is wrapped when something tries to write through the confined
// filesystem.
var ErrReadOnly = errors.New("the repository filesystem is read-only")

// IsInputError reports whether err is (or wraps) an InputError.
func IsInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}
