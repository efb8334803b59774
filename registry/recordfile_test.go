package registry

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/exitcode"
)

func TestRecordFileRoundTrip(t *testing.T) {
	t.Parallel()
	d := &Descriptor{Reference: "ghcr.io/shop/checkout:1.4.2", Repository: "ghcr.io/shop/checkout", Tag: "1.4.2",
		Registry: "ghcr.io", Digest: "sha256:" + strings.Repeat("ab", 32), MediaType: "application/vnd.oci.image.manifest.v1+json"}
	rec, err := NewRecord(d, time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	must(t, err)
	dir := t.TempDir()
	for _, tc := range []struct {
		file, prefix string
	}{
		{"staging.json", "{"},
		{"staging.yaml", "apiVersion:"},
		{"staging.YML", "apiVersion:"},
		{"staging", "{"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(dir, tc.file)
			must(t, WriteRecordFile(p, rec))
			data, err := os.ReadFile(p)
			must(t, err)
			if !strings.HasPrefix(string(data), tc.prefix) {
				t.Errorf("%s starts %q, want %q", tc.file, data[:min(len(data), 20)], tc.prefix)
			}
			back, err := ReadRecordFile(p)
			must(t, err)
			if back != rec {
				t.Errorf("read back %+v, want %+v", back, rec)
			}
		})
	}
}

func TestReadRecordFileInvalid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	d := &Descriptor{Reference: "ghcr.io/a:1", Repository: "ghcr.io/a", Tag: "1", Registry: "ghcr.io", Digest: "sha256:" + strings.Repeat("0", 64)}
	rec, err := NewRecord(d, time.Now())
	must(t, err)
	must(t, WriteRecordFile(good, rec))
	data, err := os.ReadFile(good)
	must(t, err)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	for _, tc := range []struct {
		name, file string
	}{
		{"missing", filepath.Join(dir, "none.json")},
		{"empty", write("empty.json", "")},
		{"md5", write("md5.json", strings.Replace(string(data), "sha256:", "md5:", 1))},
		{"unknown field", write("extra.json", strings.Replace(string(data), "{", `{"extra": 1,`, 1))},
		{"too large", write("large.json", strings.Repeat(" ", maxRecordSize+1))},
		{"a directory", dir},
		{"a FIFO (opening it would wait for a writer)", fifo(t, filepath.Join(dir, "fifo.json"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadRecordFile(tc.file)
			var inv *exitcode.InvalidInput
			if !errors.As(err, &inv) || exitcode.Code(err) != exitcode.Invalid {
				t.Fatalf("err %v (%T), want an exit-4 InvalidInput", err, err)
			}
			file := inv.File
			var re *RecordError
			if file == "" && errors.As(err, &re) { // the record's own error names it
				file = re.File
			}
			if file != tc.file {
				t.Errorf("%v does not name the file", err)
			}
		})
	}
}

// fifo makes a named pipe at p.
func fifo(t *testing.T, p string) string {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
