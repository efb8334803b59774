package chartsource

import (
	"context"
	"errors"
	"strings"

	"github.com/throughline-dev/throughline/chartindex"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
)

// MaxInProcessIndexSize is the largest index.yaml [LookupIndexFile] parses.
// Decoding YAML takes many times the file's size in memory (a 60 MiB index
// took 1.2 GB), so a process without a memory cap parses only small ones;
// a larger index is for an Options.LookupIndex that parses where memory is
// capped (the render child: render.LookupIndex).
const MaxInProcessIndexSize = render.InProcessIndexSize

// ErrIndexTooLarge is matched by the refusal (rule chart-too-large) of an
// index.yaml above MaxInProcessIndexSize.
var ErrIndexTooLarge = chartindex.ErrTooLarge

// ErrNotInIndex is matched by the error (exit 4) of a chart version the
// index.yaml does not list.
var ErrNotInIndex = chartindex.ErrNotInIndex

// IndexEntry is the part of an index.yaml chart version this package uses.
type IndexEntry = chartindex.Entry

// Index is the part of an HTTP chart repository's index.yaml this package
// uses.
type Index = chartindex.Index

// ParseIndex reads an index.yaml (chartindex.Parse).
func ParseIndex(data []byte) (*Index, error) { return chartindex.Parse(data) }

// indexDigest normalizes index.yaml's digest (Helm writes the bare hex).
func indexDigest(d string) string {
	if d != "" && !strings.Contains(d, ":") {
		return "sha256:" + strings.ToLower(d)
	}
	return d
}

// LookupIndexFile reads the index.yaml stored in file and returns the entry
// of name at exactly version: the default Options.LookupIndex. A file above
// MaxInProcessIndexSize is refused (rule chart-too-large, ErrIndexTooLarge)
// without being read; a malformed index is an *exitcode.InvalidInput; a
// missing version is ErrNotInIndex (exit 4).
func LookupIndexFile(ctx context.Context, file, name, version string) (IndexEntry, error) {
	e, err := chartindex.LookupFile(ctx, file, name, version, MaxInProcessIndexSize)
	if errors.Is(err, chartindex.ErrTooLarge) {
		return e, &exitcode.Refusal{Rule: RuleChartTooLarge, Err: err}
	}
	return e, err
}
