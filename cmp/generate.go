package cmp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/policy"
	"github.com/throughline-dev/throughline/promotion/policyfile"
	"github.com/throughline-dev/throughline/render"
)

// Options configure one generate call.
type Options struct {
	// WorkDir is the application path inside the streamed repository.
	WorkDir string
	Env     Env
	// Version is throughline's version (stamped and part of the cache key).
	Version string
	// Cache, when non-nil, serves and stores renders.
	Cache       *Cache
	MaxFileSize int64
	// Charts gives the packages of remote charts (nil: every remote chart
	// is refused, rule unpinned-chart).
	Charts render.ChartSource
	// OnMiss, when set, is called once before rendering, when no cache
	// entry could serve the render (or there is no cache): a plugin process
	// that runs its garbage collector lazily for a cache hit restores it
	// there.
	OnMiss func()
	// Admit, when set, is called once before rendering, after OnMiss: it
	// may wait (the resident renderer's bound on renders in flight) and
	// returns what ends the render's admission, called once the generate
	// ends; its error ends the generate. Cache hits are never admitted.
	Admit func(ctx context.Context) (done func(), err error)
}

// Result is a successful generate.
type Result struct {
	// Manifests is the YAML stream for stdout: the objects, then the
	// Acceptance.
	Manifests  []byte
	Acceptance v1alpha1.Acceptance
	CacheHit   bool
	// CacheErr is a failure to store the render in the cache, or a cache
	// entry that failed its integrity or policy check and was ignored (the
	// render itself succeeded).
	CacheErr error
	// Note, when set, is what the command says on stderr about the
	// render (the repository root was not in the stream).
	Note string
}

// Generate renders the application Argo CD asked for. Refusals are a
// *policy.Refusal, bad input a *exitcode.InvalidInput; either way no manifests
// are returned.
func Generate(ctx context.Context, opts Options) (*Result, error) {
	wd, err := filepath.Abs(opts.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("resolving working directory %s: %w", opts.WorkDir, err)
	}
	if r, err := filepath.EvalSymlinks(wd); err == nil {
		wd = r
	}
	root, prefix, err := render.RootFromSourcePath(wd, opts.Env.SourcePath)
	if err != nil {
		return nil, &exitcode.InvalidInput{File: opts.Env.SourcePath, Err: fmt.Errorf("%s: %w", EnvAppSourcePath, err)}
	}
	var byDirectory bool
	var note string
	if prefix != "" {
		// Only prefix was streamed: the repository's root files are not
		// here, and files named like them at the top of prefix are not
		// them (render.NewConfinedSubtree).
		byDirectory = true
		note = fmt.Sprintf("Argo CD streamed only %s/ (manifest-generate-paths with --plugin-use-manifest-generate-paths): "+
			"the repository root's %s (environment registry) and %s were not read; no allow-list exception applies, "+
			"and the Application's environment is not checked against the registry (throughline check binds it in Git)",
			prefix, policyfile.File, policy.AllowListFile)
	} else if opts.Env, byDirectory, err = resolveEnvironment(root, wd, opts.Env, opts.MaxFileSize); err != nil {
		return nil, err
	}
	var key string
	var cacheWarn error // an entry ignored by lookup, reported in CacheErr
	if opts.Cache != nil {
		key = appKey(opts.Version, prefix, opts.Env)
		fsys, err := render.NewConfinedSubtree(root, prefix, opts.MaxFileSize, nil)
		if err != nil {
			return nil, &exitcode.InvalidInput{Err: err}
		}
		e, warn := opts.Cache.lookup(key, fsys)
		cacheWarn = warn
		if e != nil && e.Renderer == opts.Version {
			out := e.assembled // kept with an in-memory entry
			if out == nil {
				if out, err = assemble(e.Manifests, e.Acceptance); err != nil {
					return nil, err
				}
			}
			return &Result{Manifests: out, Acceptance: e.Acceptance, CacheHit: true, Note: note}, nil
		}
	}
	if opts.OnMiss != nil {
		opts.OnMiss()
	}
	if opts.Admit != nil {
		done, err := opts.Admit(ctx)
		if err != nil {
			return nil, err
		}
		defer done()
	}
	var trace *render.Trace
	if opts.Cache != nil {
		trace = &render.Trace{}
	}
	helm, err := opts.Env.Helm()
	if err != nil {
		return nil, err
	}
	app := opts.Env.Param(ParamApp)
	if app == "" {
		app = opts.Env.AppName
	}
	d, err := acceptance.Declare(ctx, acceptance.Request{
		Render: render.Options{Root: root, RootPrefix: prefix, Path: wd, MaxFileSize: opts.MaxFileSize, Trace: trace,
			Charts: opts.Charts, Helm: helm},
		App:                  app,
		Environment:          opts.Env.Param(ParamEnvironment),
		DirectoryEnvironment: byDirectory,
		Namespace:            opts.Env.AppNamespace,
		SourceRepoURL:        opts.Env.RepoURL,
		Renderer:             opts.Version,
	})
	if err != nil {
		return nil, err
	}
	var objs bytes.Buffer
	if err := render.EncodeJSONStream(&objs, d.Objects); err != nil {
		return nil, err
	}
	out, err := assemble(objs.Bytes(), d.Acceptance)
	if err != nil {
		return nil, err
	}
	res := &Result{Manifests: out, Acceptance: d.Acceptance, Note: note}
	if opts.Cache != nil {
		res.CacheErr = errors.Join(cacheWarn, opts.Cache.store(key, &cacheEntry{
			Renderer: opts.Version, Probes: trace.Compact(), Manifests: objs.Bytes(), Acceptance: d.Acceptance,
		}))
	}
	return res, nil
}

// assemble appends the Acceptance to the objects as one JSON document (JSON
// is YAML, and encoding a large Acceptance as JSON is cheap: this runs on
// every cache hit).
func assemble(objects []byte, a v1alpha1.Acceptance) ([]byte, error) {
	acc, err := acceptance.Marshal(&a)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(objects) + len(acc) + 8)
	b.Write(objects)
	if len(objects) > 0 {
		b.WriteString("---\n")
	}
	b.Write(acc)
	b.WriteByte('\n')
	return b.Bytes(), nil
}
