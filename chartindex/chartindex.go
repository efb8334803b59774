// Package chartindex reads a Helm chart repository's index.yaml: the one
// entry of a chart version, from a file of bounded size. It is a leaf (no
// other package of throughline) so that the render child, whose memory is
// capped, can parse an index for chartsource, which fetches it.
package chartindex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	yaml "go.yaml.in/yaml/v3"

	"github.com/throughline-dev/throughline/boundedfile"
	"github.com/throughline-dev/throughline/exitcode"
)

// ErrTooLarge is matched by the error of an index.yaml above the size
// LookupFile was given.
var ErrTooLarge = errors.New("index.yaml too large to parse here")

// ErrNotInIndex is matched by the error (exit 4) of a chart version the
// index.yaml does not list.
var ErrNotInIndex = errors.New("chart version not in index.yaml")

// Entry is the part of an index.yaml chart version this package uses.
type Entry struct {
	Name    string   `json:"name" yaml:"name"`
	Version string   `json:"version" yaml:"version"`
	URLs    []string `json:"urls" yaml:"urls"`
	Digest  string   `json:"digest" yaml:"digest"`
}

// Index is the part of an HTTP chart repository's index.yaml this package
// uses (other fields are ignored: they are the repository's business).
type Index struct {
	APIVersion string             `json:"apiVersion" yaml:"apiVersion"`
	Entries    map[string][]Entry `json:"entries" yaml:"entries"`
}

// Parse reads an index.yaml (YAML or JSON): apiVersion v1 and entries
// are required, each entry of a chart must carry its name.
func Parse(data []byte) (*Index, error) {
	var idx Index
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		if err := json.Unmarshal(data, &idx); err != nil {
			return nil, fmt.Errorf("index.yaml: %w", err)
		}
	} else if err := yaml.Unmarshal(data, &idx); err != nil {
		// Decoded into the few fields used, straight from YAML: a third
		// of the memory of going through JSON (sigs.k8s.io/yaml).
		return nil, fmt.Errorf("index.yaml: not YAML: %w", err)
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
func (idx *Index) Find(name, version string) (Entry, bool) {
	for _, v := range idx.Entries[name] {
		if v.Version == version {
			return v, true
		}
	}
	return Entry{}, false
}

// LookupFile reads the index.yaml stored in file, of at most maxSize
// bytes, and returns the entry of name at exactly version. A larger file is
// ErrTooLarge (exit 4, not read); a malformed index is an *exitcode.InvalidInput; a
// missing version is ErrNotInIndex (exit 4).
func LookupFile(ctx context.Context, file, name, version string, maxSize int64) (Entry, error) {
	data, err := boundedfile.Read(file, maxSize)
	if errors.Is(err, boundedfile.ErrTooLarge) {
		return Entry{}, &exitcode.InvalidInput{Err: fmt.Errorf("%w (%w): an index is parsed here only up to %d bytes", ErrTooLarge, err, maxSize)}
	}
	if err != nil {
		return Entry{}, fmt.Errorf("reading index.yaml: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return Entry{}, err
	}
	idx, err := Parse(data)
	if err != nil {
		return Entry{}, &exitcode.InvalidInput{Err: err}
	}
	e, ok := idx.Find(name, version)
	if !ok {
		return Entry{}, &exitcode.InvalidInput{Err: fmt.Errorf("the repository's index.yaml has no version %s of %s: %w", version, name, ErrNotInIndex)}
	}
	return e, nil
}
