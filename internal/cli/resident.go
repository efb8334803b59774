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
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/render"
)

// EnvResidentDir names the resident renderer's directory (its socket is
// resident.SocketName inside): set, cmp generate hands its render to the
// resident process there and renders in-process only when it is absent or
// fails.
const EnvResidentDir = "THROUGHLINE_RESIDENT_DIR"

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

// printedError is a refusal the resident renderer already formatted: the
// exit code and what to print on stderr (ExitCode prints it as it is).
type printedError struct {
	code   int
	stderr string
}

func (e *printedError) Error() string { return e.stderr }

func (e *printedError) ExitCode() int { return e.code }

// viaResident hands the render to the resident renderer in o.ResidentDir.
// done is false when it did not give one (absent, unhealthy, too slow,
// died mid-render, or an internal error of its own): the caller renders
// in-process, and this has said so on log (one warning). When done, err
// is the render's refusal, if any.
func (o *CMPGenerate) viaResident(ctx context.Context, log zerolog.Logger, wd string, stdout io.Writer) (done bool, err error) {
	c := &resident.Client{Dir: o.ResidentDir, Timeout: o.ResidentTimeout}
	res, err := c.Generate(ctx, resident.Request{
		WorkDir: wd, Environ: resident.ForwardedEnviron(os.Environ()), MaxFileSize: o.MaxFileSize, NoCache: o.NoCache,
	})
	switch {
	case err != nil:
		log.Warn().Err(err).Msg("rendering in-process")
		return false, nil
	case res.Code == exitcode.Internal:
		log.Warn().Str("socket", resident.SocketPath(o.ResidentDir)).Str("error", res.Stderr).
			Msg("the resident renderer failed: rendering in-process")
		return false, nil
	case res.Code != exitcode.OK:
		return true, &printedError{code: res.Code, stderr: res.Stderr}
	}
	for _, w := range res.Warnings {
		log.Warn().Str("error", w).Msg("render cache not updated")
	}
	if len(res.Exceptions) > 0 {
		var exs []policy.Exception
		if json.Unmarshal(res.Exceptions, &exs) == nil {
			LogExceptions(log, exs)
		}
	}
	log.Info().Str("app", res.App).Str("revision", os.Getenv(cmp.EnvAppRevision)).
		Str("renderedHash", res.RenderedHash).Int("objects", res.Objects).
		Bool("cached", res.CacheHit).Bool("resident", true).Msg("rendered")
	_, err = stdout.Write(res.Manifests)
	return true, err
}
