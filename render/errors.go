package render

import (
	"errors"
)

// ErrOutsideRoot is wrapped by every refusal to touch a path that resolves
// outside the repository root.
var ErrOutsideRoot = errors.New("path resolves outside the repository root")

// ErrTooLarge is wrapped when a file exceeds the size cap.
var ErrTooLarge = errors.New("file exceeds the size limit")

// ErrReadOnly is wrapped when something tries to write through the confined
// filesystem.
var ErrReadOnly = errors.New("the repository filesystem is read-only")
