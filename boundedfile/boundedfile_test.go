package boundedfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRead attacks the reader with what a hostile or careless path names:
// every case ends at once, with the error its kind says, and no error
// holds the file's content.
func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const secret = "-----BEGIN OPENSSH PRIVATE KEY----- s3cr3t"
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := write("key", secret)
	big := write("big", secret+strings.Repeat("x", 100))
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A Secret's key: a link to a link into ..data.
	data := filepath.Join(dir, "..data")
	must(t, os.Mkdir(data, 0o700))
	must(t, os.WriteFile(filepath.Join(data, "tls.key"), []byte(secret), 0o600))
	must(t, os.Symlink(filepath.Join("..data", "tls.key"), filepath.Join(dir, "tls.key")))
	must(t, os.Symlink("tls.key", filepath.Join(dir, "link-to-link")))
	must(t, os.Symlink("fifo", filepath.Join(dir, "link-to-fifo")))

	for _, tc := range []struct {
		name     string
		file     string
		limit    int64
		noFollow bool
		want     string
		err      error
	}{
		{"a key", key, 1 << 10, false, secret, nil},
		{"exactly the limit", key, int64(len(secret)), false, secret, nil},
		{"over the limit", big, int64(len(secret)), false, "", ErrTooLarge},
		{"a Secret's link into ..data", filepath.Join(dir, "link-to-link"), 1 << 10, false, secret, nil},
		{"a FIFO never blocks", fifo, 1 << 10, false, "", ErrNotRegular},
		{"a link to a FIFO", filepath.Join(dir, "link-to-fifo"), 1 << 10, false, "", ErrNotRegular},
		{"a directory", dir, 1 << 10, false, "", ErrNotRegular},
		{"a device that never ends", "/dev/zero", 1 << 10, false, "", ErrNotRegular},
		{"a terminal-like device", "/dev/null", 1 << 10, false, "", ErrNotRegular},
		{"missing", filepath.Join(dir, "nope"), 1 << 10, false, "", fs.ErrNotExist},
		{"no link where none may be", filepath.Join(dir, "tls.key"), 1 << 10, true, "", syscall.ELOOP},
		{"a file where none is a link", key, 1 << 10, true, secret, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			read := Read
			if tc.noFollow {
				read = ReadNoFollow
			}
			done := make(chan struct{})
			var got []byte
			var err error
			go func() {
				defer close(done)
				got, err = read(tc.file, tc.limit)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("reading %s blocked", tc.file)
			}
			if tc.err == nil {
				if err != nil || string(got) != tc.want {
					t.Fatalf("%q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, tc.err) || got != nil {
				t.Fatalf("%q, %v; want %v", got, err, tc.err)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("the error holds the content: %v", err)
			}
		})
	}
}

// TestReadSizeLies: a file whose size says less than it holds (procfs
// says 0 for /proc/self/status, about 1 KiB) is refused past the limit,
// not returned cut: the size a stat gives before the read is not trusted.
func TestReadSizeLies(t *testing.T) {
	t.Parallel()
	const p = "/proc/self/status"
	fi, err := os.Stat(p)
	if err != nil || fi.Size() != 0 {
		t.Fatalf("%s: size %v, %v: the case needs procfs's size 0", p, fi, err)
	}
	if _, err := Read(p, 16); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%s under a 16-byte limit: %v", p, err)
	}
	if data, err := Read(p, 1<<20); err != nil || !strings.Contains(string(data), "Name:") {
		t.Fatalf("%s: %q, %v", p, data, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
