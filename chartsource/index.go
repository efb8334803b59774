package chartsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/exitcode"
)

// MaxInProcessIndexSize is the largest index.yaml [LookupIndexFile] parses.
// Decoding YAML takes many times the file's size in memory (a 60 MiB index
// took 1.2 GB), so a process without a memory cap parses only small ones;
// a larger index is for an Options.LookupIndex that parses where memory is
// capped (the render child).
const MaxInProcessIndexSize = 8 << 20

// ErrIndexTooLarge is matched by the refusal (rule chart-too-large) of an
// index.yaml above MaxInProcessIndexSize.
var ErrIndexTooLarge = errors.New("index.yaml too large to parse in-process")

// ErrNotInIndex is matched by the error (exit 4) of a chart version the
// index.yaml does not list.
var ErrNotInIndex = errors.New("chart version not in index.yaml")

// IndexEntry is the part of an index.yaml chart version this package uses.
type IndexEntry struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	Digest  string   `json:"digest"`
}

// Index is the part of an HTTP chart repository's index.yaml this package
// uses (other fields are ignored: they are the repository's business).
type Index struct {
	APIVersion string                  `json:"apiVersion"`
	Entries    map[string][]IndexEntry `json:"entries"`
}

// ParseIndex reads an index.yaml (YAML or JSON): apiVersion v1 and entries
// are required, each entry of a chart must carry its name.
func ParseIndex(data []byte) (*Index, error) {
	js := data
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		var err error
		if js, err = sigyaml.YAMLToJSON(data); err != nil {
			return nil, fmt.Errorf("index.yaml: not YAML: %w", err)
		}
	}
	var idx Index
	if err := json.Unmarshal(js, &idx); err != nil {
		return nil, fmt.Errorf("index.yaml: %w", err)
	}
	if idx.APIVersion != "v1" {
		return nil, fmt.Errorf("index.yaml: apiVersion %q, want v1", idx.APIVersion)
	}
	if idx.Entries == nil {
		return nil, errors.New("index.yaml: no entries")
	}
	for n, vs := range idx.Entries {
		for i, v := range vs {
			if v.Name != n {
				return nil, fmt.Errorf("index.yaml: entries.%s[%d]: name %q", n, i, v.Name)
			}
		}
	}
	return &idx, nil
}

// Find returns the entry of name at exactly version.
func (idx *Index) Find(name, version string) (IndexEntry, bool) {
	for _, v := range idx.Entries[name] {
		if v.Version == version {
			return v, true
		}
	}
	return IndexEntry{}, false
}

// indexDigest normalizes index.yaml's digest (Helm writes the bare hex).
func indexDigest(d string) string {
	if d != "" && !strings.Contains(d, ":") {
		return "sha256:" + strings.ToLower(d)
	}
	return d
}

// LookupIndexFile reads the index.yaml stored in file and returns the entry
// of name at exactly version: the default Options.LookupIndex, and what the
// render child runs. A file above MaxInProcessIndexSize is refused (rule
// chart-too-large, ErrIndexTooLarge) without being read; a malformed index
// is an *exitcode.InvalidInput; a missing version is ErrNotInIndex (exit 4).
func LookupIndexFile(ctx context.Context, file, name, version string) (IndexEntry, error) {
	f, err := os.Open(file)
	if err != nil {
		return IndexEntry{}, fmt.Errorf("reading index.yaml: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only
	fi, err := f.Stat()
	if err != nil {
		return IndexEntry{}, fmt.Errorf("reading index.yaml: %w", err)
	}
	if fi.Size() > MaxInProcessIndexSize {
		return IndexEntry{}, indexTooLarge(fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxInProcessIndexSize+1))
	if err != nil {
		return IndexEntry{}, fmt.Errorf("reading index.yaml: %w", err)
	}
	if len(data) > MaxInProcessIndexSize {
		return IndexEntry{}, indexTooLarge(int64(len(data)))
	}
	if err := ctx.Err(); err != nil {
		return IndexEntry{}, err
	}
	idx, err := ParseIndex(data)
	if err != nil {
		return IndexEntry{}, &exitcode.InvalidInput{Err: err}
	}
	e, ok := idx.Find(name, version)
	if !ok {
		return IndexEntry{}, &exitcode.InvalidInput{Err: fmt.Errorf("the repository's index.yaml has no version %s of %s: %w", version, name, ErrNotInIndex)}
	}
	return e, nil
}

func indexTooLarge(size int64) error {
	return &exitcode.Refusal{Rule: RuleChartTooLarge,
		Err: fmt.Errorf("%w: %d bytes, and an index is parsed in-process only up to %d bytes", ErrIndexTooLarge, size, MaxInProcessIndexSize)}
}
