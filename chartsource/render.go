package chartsource

import (
	"context"
	"fmt"

	"github.com/throughline-dev/throughline/exitcode"

	"github.com/throughline-dev/throughline/render"
)

// ForRender is the render's chart source (render.Options.Charts): Source
// with the lock file read through the render's own confined filesystem, so
// that the render cache records the lock file like any input and reuses a
// render exactly while the lock is unchanged (the package it pins is then
// the same bytes, verified by digest).
type ForRender struct {
	Fetcher *Fetcher
}

// Chart implements render.ChartSource.
func (r ForRender) Chart(ctx context.Context, files render.ChartFiles, dir string, ref render.ChartRef) ([]byte, error) {
	return Source{FS: files, Fetcher: r.Fetcher}.Chart(ctx, dir, Ref(ref))
}

var _ render.ChartSource = ForRender{}

// ChartDigest implements render.ChartDigester: the digest the lock file in
// dir pins ref to (the one Chart verified the package against), read
// through the render's filesystem as Chart reads it.
func (r ForRender) ChartDigest(_ context.Context, files render.ChartFiles, dir string, ref render.ChartRef) (string, error) {
	lock, err := ReadLock(files, dir)
	if err != nil {
		return "", err
	}
	e, ok := lock.Find(Ref(ref))
	if !ok {
		return "", &exitcode.Refusal{Rule: RuleUnpinnedChart, File: LockPath(dir), Object: Ref(ref).String(),
			Reason: fmt.Sprintf("remote chart %s is not pinned by digest", Ref(ref))}
	}
	return e.Digest, nil
}

var _ render.ChartDigester = ForRender{}

// ResolveChart asks the chart's source what version ref is now (never the
// cache: a version is a name the source can move) and returns its digest:
// a rollback's check that the package it accepted is still the one served.
func (r ForRender) ResolveChart(ctx context.Context, ref render.ChartRef) (string, error) {
	res, err := r.Fetcher.Resolve(ctx, Ref(ref))
	if err != nil {
		return "", err
	}
	return res.Digest, nil
}
