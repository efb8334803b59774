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

// ErrGitDir is wrapped by every refusal to read a path that goes through a
// .git directory (or a .git file), at any depth, directly or by a symlink:
// a checkout keeps its credentials there.
var ErrGitDir = errors.New("path goes through .git: throughline reads no repository metadata")

// pathRefusal is the sentinel a field's message wraps for err, a refusal
// of the confined filesystem to resolve a path: ErrGitDir, else
// ErrOutsideRoot (which never tells what lies outside).
func pathRefusal(err error) error {
	if errors.Is(err, ErrGitDir) {
		return ErrGitDir
	}
	return ErrOutsideRoot
}
