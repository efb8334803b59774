// Package boundedfile is the one reader of the local files throughline is
// pointed at: keys, identity tokens, CA bundles, signing configs, drift
// records and index files named on the command line or mounted from a
// Secret. Whatever the path names, Read never blocks on it (a FIFO or a
// device is refused, judged on the file opened, not on a path that could
// be replaced in between), never reads more than its limit, and says what
// went wrong without any of the file's content.
//
// A regular file of bounded size is read at once, so Read takes no
// context: it cannot wait on anything a context could cancel.
package boundedfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped when the path names something else than a
// regular file (a directory, a FIFO, a device, a socket).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped when the file holds more than the limit.
var ErrTooLarge = errors.New("over the size limit")

// Read reads the regular file file, following symbolic links (a key
// mounted from a Secret is a link into its ..data directory), at most
// limit bytes: a larger file is ErrTooLarge, not a prefix of it. Errors
// are os's (*fs.PathError naming the file, fs.ErrNotExist for a missing
// one), ErrNotRegular or ErrTooLarge.
func Read(file string, limit int64) ([]byte, error) {
	return read(file, limit, 0)
}

// ReadNoFollow is Read refusing a symbolic link as the last element of
// file (ELOOP), for files under a directory throughline owns (a cache
// entry is never a link).
func ReadNoFollow(file string, limit int64) ([]byte, error) {
	return read(file, limit, syscall.O_NOFOLLOW)
}

func read(file string, limit int64, flags int) ([]byte, error) {
	if limit < 0 {
		return nil, fmt.Errorf("reading %s: negative limit %d", file, limit)
	}
	// Non-blocking: opening a FIFO does not wait for a writer.
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK|flags, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only: the read reported any failure
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", file, ErrNotRegular, fi.Mode().Type())
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, the limit is %d", file, ErrTooLarge, fi.Size(), limit)
	}
	// The size may change while it is read: the limit holds whatever it
	// becomes.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", file, ErrTooLarge, limit)
	}
	return data, nil
}
