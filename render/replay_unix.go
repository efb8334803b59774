//go:build linux || darwin || freebsd

package render

import (
	"bytes"
	"crypto/sha256"
	"path/filepath"
	"slices"
	"syscall"
)

// replayRead is the fast path of a file probe: it reads the plain path rel
// under the root and compares its content with want. decided is false when
// it cannot tell (a directory of the path or the file itself is a symbolic
// link, the file is not regular or is above the size cap, it changed while
// read, any error): the caller then replays the recorded probes, which
// give the refusal or the resolution the render saw. Decided, match says
// that the file is a regular file that resolved to itself, of the content
// want. buf is reused across calls.
//
// The checks are those of readFile: lstat before open (a named pipe or a
// device is never opened), open without following a link and without
// blocking, fstat on the open file to see the file lstat saw.
func (c *ConfinedFS) replayRead(rel string, want *[32]byte, buf *[]byte) (match, decided bool) {
	abs := c.root + "/" + rel
	if c.root == "/" {
		abs = "/" + rel
	}
	dir := filepath.Dir(abs)
	if rd, err := c.resolvedDir(dir); err != nil || rd != dir {
		return false, false
	}
	var st syscall.Stat_t
	err := syscall.Lstat(abs, &st)
	for err == syscall.EINTR {
		err = syscall.Lstat(abs, &st)
	}
	if err != nil {
		return false, false
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size > c.maxFileSize {
		return false, false
	}
	const flags = syscall.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC | syscall.O_NOFOLLOW
	fd, err := syscall.Open(abs, flags, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(abs, flags, 0)
	}
	if err != nil {
		return false, false
	}
	defer func() { _ = syscall.Close(fd) }() // opened read-only
	var open syscall.Stat_t
	if err := syscall.Fstat(fd, &open); err != nil || open.Dev != st.Dev || open.Ino != st.Ino {
		return false, false
	}
	b := (*buf)[:0]
	b = slices.Grow(b, int(open.Size)+bytes.MinRead)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, bytes.MinRead)
		}
		n, err := syscall.Read(fd, b[len(b):cap(b)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return false, false
		}
		if n == 0 {
			break
		}
		b = b[:len(b)+n]
		if int64(len(b)) > c.maxFileSize {
			*buf = b[:0]
			return false, false
		}
	}
	*buf = b[:0]
	if c.totalRead.Add(int64(len(b))) > DefaultMaxTotalRead {
		return false, true // readFile refuses it: not the recorded hash
	}
	return sha256.Sum256(b) == *want, true
}
