package registry

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/exitcode"
)

// maxRecordFile bounds the bytes ReadRecordFile reads (ParseRecord refuses more than maxRecordSize).
const maxRecordFile = 2 << 20

// ReadRecordFile reads one drift record file (at most maxRecordFile bytes)
// as untrusted input; an unreadable or invalid file is an
// *exitcode.InvalidInput (exit 4).
func ReadRecordFile(file string) (Record, error) {
	f, err := os.Open(file)
	if err != nil {
		return Record{}, &exitcode.InvalidInput{File: file, Err: err}
	}
	defer func() { _ = f.Close() }() // opened read-only: the read reported any failure
	data, err := io.ReadAll(io.LimitReader(f, maxRecordFile))
	if err != nil {
		return Record{}, &exitcode.InvalidInput{File: file, Err: err}
	}
	r, err := ParseRecord(file, data)
	if err != nil {
		return Record{}, &exitcode.InvalidInput{Err: err}
	}
	return r, nil
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
