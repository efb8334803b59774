package registry

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/throughline-dev/throughline/atomicfile"
	"github.com/throughline-dev/throughline/boundedfile"
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
// could block or never end), at most maxRecordFile bytes (boundedfile).
// An unreadable or larger one is an *exitcode.InvalidInput naming the file.
func ReadRecordBytes(file string) ([]byte, error) {
	data, err := boundedfile.Read(file, maxRecordFile)
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
