package render

import (
	"context"
	"errors"
	"fmt"

	"github.com/throughline-dev/throughline/chartindex"
)

// InProcessIndexSize and ChildIndexSize are the largest index.yaml
// LookupIndex parses in this process and in the render child (the wire
// limit of an index, chartsource.DefaultMaxIndexSize). Decoding takes
// about 40 times the file's size at its peak: a 4 MiB index of dense
// entries parses within the child's default 256 MiB, a larger one ends at
// the child's memory budget (THROUGHLINE_RENDER_MEMORY_MIB raises it).
const (
	InProcessIndexSize = 4 << 20
	ChildIndexSize     = 64 << 20
)

// LookupIndex is chartsource.Options.LookupIndex for a process that
// renders in a child (UseWorker): the downloaded index.yaml is parsed in
// a confined child, under its memory cap and budget, which may read that
// file alone; decoding YAML takes many times the file's size, which the
// parent, without a cap, must not pay for a repository's index. Without a
// worker it parses in-process, up to InProcessIndexSize.
func LookupIndex(ctx context.Context, indexFile, name, version string) (chartindex.Entry, error) {
	w := worker.Load()
	if w == nil {
		return chartindex.LookupFile(ctx, indexFile, name, version, InProcessIndexSize)
	}
	what := fmt.Sprintf("index.yaml of chart %s", name)
	resp, err := runWorker(ctx, w, what, workerRequest{Root: "", MemoryLimit: w.MemoryLimit,
		Index: &indexLookup{File: indexFile, Name: name, Version: version}})
	if err != nil {
		return chartindex.Entry{}, err
	}
	if resp.Error != nil {
		return chartindex.Entry{}, resp.Error.err()
	}
	if resp.Entry == nil {
		return chartindex.Entry{}, errors.New("looking up " + what + ": the render child answered no entry")
	}
	return *resp.Entry, nil
}
