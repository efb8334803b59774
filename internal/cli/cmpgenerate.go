package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/cmp/resident"
	"github.com/throughline-dev/throughline/render"
)

// EnvCacheDir overrides the default render cache directory of the sidecar.
const EnvCacheDir = "THROUGHLINE_CACHE_DIR"

// CMPGenerateShort is the one-line help of cmp generate.
const CMPGenerateShort = "Render the application in the working directory for Argo CD"

// CMPGenerateLong is the help of cmp generate (throughline cmp generate and
// throughline-cmp generate).
const CMPGenerateLong = `Run by Argo CD's plugin sidecar in the application path of the streamed
repository. Prints the objects plus one Acceptance on stdout, each a JSON
document on one line (the objects in their canonical RFC 8785 form; JSON is
YAML, Argo CD reads the stream as any other). On any refusal it exits 3
(policy) or 4 (invalid input) with every violation on stderr and nothing on
stdout, so Argo CD shows a ComparisonError instead of pruning.

Reads ARGOCD_APP_NAME, ARGOCD_APP_NAMESPACE, ARGOCD_APP_REVISION,
ARGOCD_APP_SOURCE_PATH, ARGOCD_APP_SOURCE_REPO_URL, KUBE_VERSION,
KUBE_API_VERSIONS, ARGOCD_ENV_* and PARAM_* (environment, app). The output
depends on the application's files only, never on ARGOCD_APP_REVISION (logged):
a commit that does not change the render leaves the application Synced.

When throughline-policy.yaml at the repository root the plugin sees declares
environments, the environment is the one whose paths hold the application
path: an environment parameter naming another one, a destination namespace
(ARGOCD_APP_NAMESPACE) that is not one of its namespaces, an app parameter
naming another app, or a path of no environment is refused (exit 3, naming
both sides), and the Acceptance says the path's environment.`

// CMPGenerate are the flags of cmp generate.
type CMPGenerate struct {
	CacheDir    string
	NoCache     bool
	MaxFileSize int64
	CacheBytes  int64
	// ResidentDir is the resident renderer's directory ("": none, render
	// in-process); ResidentTimeout bounds a render through it.
	ResidentDir     string
	ResidentTimeout time.Duration
	// OnMiss is cmp.Options.OnMiss.
	OnMiss func()
}

// AddFlags declares the flags of CMPGenerate on f.
func (o *CMPGenerate) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.CacheDir, "cache-dir", DefaultCacheDir(), "render cache directory (env "+EnvCacheDir+")")
	f.BoolVar(&o.NoCache, "no-cache", false, "render every time, without the cache")
	f.Int64Var(&o.CacheBytes, "cache-max-bytes", cmp.DefaultCacheMaxBytes, "bound of the render cache on disk")
	f.Int64Var(&o.MaxFileSize, "max-file-size", render.DefaultMaxFileSize, "refuse any input file larger than this many bytes")
	f.StringVar(&o.ResidentDir, "resident-dir", os.Getenv(EnvResidentDir),
		"directory of the resident renderer's socket (throughline cmp serve): render through it, in-process when it fails (env "+
			EnvResidentDir+")")
	f.DurationVar(&o.ResidentTimeout, "resident-timeout", resident.DefaultTimeout,
		"longest wait for the resident renderer before rendering in-process")
}

// Run renders the application in the working directory for Argo CD
// (cmp.Generate with the environment of the process), logs the render on
// log and writes the manifests to stdout. version is the renderer's
// (Version): it keys the cache and is stamped in the Acceptance.
func (o *CMPGenerate) Run(ctx context.Context, log zerolog.Logger, version string, stdout io.Writer) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if o.ResidentDir != "" {
		if done, err := o.viaResident(ctx, log, wd, stdout); done {
			return err
		}
	}
	opts := cmp.Options{
		WorkDir:     wd,
		Env:         cmp.EnvFromEnviron(os.Environ()),
		Version:     version,
		MaxFileSize: o.MaxFileSize,
		OnMiss:      o.OnMiss,
	}
	charts := chartsource.Options{UserAgent: "throughline/" + version}
	if !o.NoCache {
		opts.Cache = &cmp.Cache{Dir: o.CacheDir, MaxBytes: o.CacheBytes}
		charts.CacheDir = DefaultChartCacheDir()
	}
	opts.Charts = chartsource.ForRender{Fetcher: chartsource.NewFetcher(charts)}
	res, err := cmp.Generate(ctx, opts)
	if err != nil {
		return err
	}
	if res.CacheErr != nil {
		log.Warn().Err(res.CacheErr).Msg("render cache not updated")
	}
	if res.Note != "" {
		log.Warn().Msg(res.Note)
	}
	LogExceptions(log, res.Acceptance.Spec.Exceptions)
	log.Info().Str("app", res.Acceptance.Spec.App).Str("revision", opts.Env.Revision).
		Str("renderedHash", res.Acceptance.Spec.RenderedHash).Int("objects", res.Acceptance.Spec.ObjectCount).
		Bool("cached", res.CacheHit).Msg("rendered")
	_, err = stdout.Write(res.Manifests)
	return err
}

// DefaultCacheDir is $THROUGHLINE_CACHE_DIR, else the user's cache
// directory (os.UserCacheDir)/throughline/render; "" when there is none:
// never a predictable path in the shared temporary directory (cmp.Cache then
// renders uncached with a warning).
func DefaultCacheDir() string {
	return defaultCacheDir("render")
}

// DefaultChartCacheDir is where remote Helm chart packages are kept by
// digest: $THROUGHLINE_CACHE_DIR/charts, else the user's cache
// directory/throughline/charts (the place `throughline pin` fills).
func DefaultChartCacheDir() string {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return filepath.Join(d, "charts")
	}
	return defaultCacheDir("charts")
}

func defaultCacheDir(kind string) string {
	if d := os.Getenv(EnvCacheDir); d != "" && kind == "render" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "throughline", kind)
	}
	return ""
}
