// Package privatedir creates and checks a directory that only the current
// user can write: where a process keeps what it reads back later (a
// cache). It refuses a directory that someone else could have planted or
// can write: a symbolic link, not a directory, group- or world-writable,
// or owned by another user. It does not check the directory's parents or
// the files inside it.
package privatedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Why a directory is refused (errors.Is on the error of Ensure).
var (
	ErrSymlink  = errors.New("is a symbolic link")
	ErrNotDir   = errors.New("is not a directory")
	ErrWritable = errors.New("is writable by group or others")
	ErrOwner    = errors.New("is owned by another user")
)

// Ensure creates dir (mode 0700, with its missing parents) when it does
// not exist, then checks it. The error names dir and wraps one of the
// Err values, or the file system's error.
func Ensure(dir string) error {
	if dir == "" {
		return errors.New("no directory given")
	}
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating directory %s: %w", dir, err)
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return fmt.Errorf("checking directory %s: %w", dir, err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("directory %s %w", dir, ErrSymlink)
	case !fi.IsDir():
		return fmt.Errorf("%s %w", dir, ErrNotDir)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("directory %s %w (mode %v)", dir, ErrWritable, fi.Mode().Perm())
	}
	if uid, ok := owner(fi); ok && uid != os.Geteuid() {
		return fmt.Errorf("directory %s %w (uid %d, not the current user's %d)", dir, ErrOwner, uid, os.Geteuid())
	}
	return nil
}
