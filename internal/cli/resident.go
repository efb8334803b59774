package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/cmp/resident"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/pluginclient"
	"github.com/throughline-dev/throughline/render"
)

// EnvResidentDir names the resident renderer's directory (its socket is
// resident.SocketName inside): set, cmp generate hands its render to the
// resident process there and renders in-process only when it is absent or
// fails.
const EnvResidentDir = pluginclient.EnvResidentDir

// Resident renders the requests of a resident renderer (throughline cmp
// serve) as cmp generate renders in-process: cmp.Generate with the
// request's directory and environment, the process's in-memory cache and
// chart source.
type Resident struct {
	Version     string
	MaxFileSize int64
	// Cache is the render cache (InMemory set); nil renders uncached.
	Cache  *cmp.Cache
	Charts render.ChartSource
	// Renders bounds the renders (cache misses) in flight; the others
	// wait their turn. nil: no bound.
	Renders *resident.RenderLimit
}

// Handle is a resident.Handler. The request's directory must be an
// absolute, clean path of a directory; the render is confined to the
// repository root it and ARGOCD_APP_SOURCE_PATH give (cmp.Generate),
// symbolic links included, with the smaller of the request's and the
// server's file size cap.
func (r *Resident) Handle(ctx context.Context, req resident.Request) *resident.Response {
	res, err := r.generate(ctx, req)
	if err != nil {
		var stderr bytes.Buffer
		out := &resident.Response{Code: ExitCode(err, &stderr), Stderr: stderr.String()}
		switch {
		case errors.Is(err, render.ErrTimeBudget):
			out.BudgetKill = "time"
		case errors.Is(err, render.ErrMemoryBudget):
			out.BudgetKill = "memory"
		}
		return out
	}
	out := &resident.Response{
		Manifests: res.Manifests, CacheHit: res.CacheHit, App: res.Acceptance.Spec.App,
		RenderedHash: res.Acceptance.Spec.RenderedHash, Objects: res.Acceptance.Spec.ObjectCount,
	}
	if res.CacheErr != nil {
		out.Warnings = append(out.Warnings, res.CacheErr.Error())
	}
	if res.Note != "" {
		out.Warnings = append(out.Warnings, res.Note)
	}
	if exs := res.Acceptance.Spec.Exceptions; len(exs) > 0 {
		if b, err := json.Marshal(exs); err == nil {
			out.Exceptions = b
		}
	}
	return out
}

func (r *Resident) generate(ctx context.Context, req resident.Request) (*cmp.Result, error) {
	if !filepath.IsAbs(req.WorkDir) || filepath.Clean(req.WorkDir) != req.WorkDir {
		return nil, &exitcode.InvalidInput{File: req.WorkDir, Err: errors.New("the plugin's directory must be an absolute, clean path")}
	}
	fi, err := os.Stat(req.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("resident renderer reading the plugin's directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, &exitcode.InvalidInput{File: req.WorkDir, Err: errors.New("not a directory")}
	}
	maxFile := r.MaxFileSize
	if req.MaxFileSize > 0 && (maxFile <= 0 || req.MaxFileSize < maxFile) {
		maxFile = req.MaxFileSize
	}
	opts := cmp.Options{
		WorkDir:     req.WorkDir,
		Env:         cmp.EnvFromEnviron(req.Environ),
		Version:     r.Version,
		MaxFileSize: maxFile,
		Charts:      r.Charts,
	}
	if !req.NoCache {
		opts.Cache = r.Cache
	}
	if r.Renders != nil {
		opts.Admit = func(ctx context.Context) (func(), error) {
			if err := r.Renders.Acquire(ctx); err != nil {
				return nil, err
			}
			return r.Renders.Release, nil
		}
	}
	return cmp.Generate(ctx, opts)
}

// viaResident hands the render to the resident renderer in o.ResidentDir
// (pluginclient.Generate, what the thin plugin binary runs). done is false
// when it did not give one: the caller renders in-process, and this has
// said so on log (one warning). When done, err is the render's refusal, if
// any.
func (o *CMPGenerate) viaResident(ctx context.Context, log zerolog.Logger, wd string, stdout io.Writer) (done bool, err error) {
	return pluginclient.Generate(ctx, log, pluginclient.Options{
		Dir: o.ResidentDir, Timeout: o.ResidentTimeout, WorkDir: wd, Environ: os.Environ(),
		MaxFileSize: o.MaxFileSize, NoCache: o.NoCache,
	}, stdout)
}
