package chartsource

import (
	"context"

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
