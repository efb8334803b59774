package registry

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/exitcode"
)

// maxRecordFile bounds the bytes ReadRecordBytes reads (ParseRecord refuses more than maxRecordSize).
const maxRecordFile = 2 << 20

// ReadRecordFile reads one drift record file (ReadRecordBytes) as
// untrusted input; an unreadable or invalid file is an
// *exitcode.InvalidInput (exit 4).
func ReadRecordFile(file string) (Record, error) {
	data, err := ReadRecordBytes(file)
	if err != nil {
		return Record{}, err
	}
	r, err := ParseRecord(file, data)
	if err != nil {
		return Record{}, &exitcode.InvalidInput{Err: err}
	}
	return r, nil
}

// ReadRecordBytes reads a drift record file of any kind (an image tag's,
// a chart version's): a regular file (never a FIFO or a device, which
// could block or never end), at most maxRecordFile bytes. An unreadable
// one is an *exitcode.InvalidInput naming the file.
func ReadRecordBytes(file string) ([]byte, error) {
	// Non-blocking: opening a FIFO does not wait for a writer. The kind is
	// judged on the file opened (fstat), not on a path that could be
	// replaced between a stat and the open.
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, &exitcode.InvalidInput{File: file, Err: err}
	}
	defer func() { _ = f.Close() }() // opened read-only: the read reported any failure
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if err != nil {
		return nil, &exitcode.InvalidInput{File: file, Err: err}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRecordFile))
	if err != nil {
		return nil, &exitcode.InvalidInput{File: file, Err: err}
	}
	return data, nil
}

// WriteRecordFile writes r to file atomically: YAML when file ends in
// .yaml or .yml, else JSON.
func WriteRecordFile(file string, r Record) error {
	ext := strings.ToLower(filepath.Ext(file))
	data, err := r.Marshal(ext == ".yaml" || ext == ".yml")
	if err != nil {
		return fmt.Errorf("encoding drift record: %w", err)
	}
	return atomicfile.Write(file, data, 0o644)
}
