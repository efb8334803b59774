package main

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/cmp"
	"github.com/throughline-dev/throughline/render"
)

// EnvCacheDir overrides the default render cache directory of the sidecar.
const EnvCacheDir = "THROUGHLINE_CACHE_DIR"

func newCMPCommand(g *globals, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cmp",
		Short: "Argo CD Config Management Plugin commands (run by the repo-server sidecar)",
	}
	cmd.AddCommand(newCMPGenerateCommand(g, stdout))
	return cmd
}

const cmpGenerateLong = `Run by Argo CD's plugin sidecar in the application path of the streamed
repository. Prints the objects plus one Acceptance on stdout. On any refusal it
exits 3 (policy) or 4 (invalid input) with every violation on stderr and nothing
on stdout, so Argo CD shows a ComparisonError instead of pruning.

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

// cmpGenerateOptions are the flags of throughline cmp generate.
type cmpGenerateOptions struct {
	cacheDir    string
	noCache     bool
	maxFileSize int64
	cacheBytes  int64
}

func (o *cmpGenerateOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.cacheDir, "cache-dir", defaultCacheDir(), "render cache directory (env "+EnvCacheDir+")")
	f.BoolVar(&o.noCache, "no-cache", false, "render every time, without the cache")
	f.Int64Var(&o.cacheBytes, "cache-max-bytes", cmp.DefaultCacheMaxBytes, "bound of the render cache on disk")
	f.Int64Var(&o.maxFileSize, "max-file-size", render.DefaultMaxFileSize, "refuse any input file larger than this many bytes")
}

func newCMPGenerateCommand(g *globals, stdout io.Writer) *cobra.Command {
	var o cmpGenerateOptions
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Render the application in the working directory for Argo CD",
		Long:  cmpGenerateLong,
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), g, stdout) },
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func (o *cmpGenerateOptions) run(ctx context.Context, g *globals, stdout io.Writer) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	opts := cmp.Options{
		WorkDir:     wd,
		Env:         cmp.EnvFromEnviron(os.Environ()),
		Version:     buildVersion(),
		MaxFileSize: o.maxFileSize,
	}
	if !o.noCache {
		opts.Cache = &cmp.Cache{Dir: o.cacheDir, MaxBytes: o.cacheBytes}
	}
	res, err := cmp.Generate(ctx, opts)
	if err != nil {
		return err
	}
	if res.CacheErr != nil {
		g.log.Warn().Err(res.CacheErr).Msg("render cache not updated")
	}
	logExceptions(g, res.Acceptance.Spec.Exceptions)
	g.log.Info().Str("app", res.Acceptance.Spec.App).Str("revision", opts.Env.Revision).
		Str("renderedHash", res.Acceptance.Spec.RenderedHash).Int("objects", res.Acceptance.Spec.ObjectCount).
		Bool("cached", res.CacheHit).Msg("rendered")
	_, err = stdout.Write(res.Manifests)
	return err
}

// defaultCacheDir is $THROUGHLINE_CACHE_DIR, else the user's cache directory
// (os.UserCacheDir)/throughline/render; "" when there is none: never a
// predictable path in the shared temporary directory (cmp.Cache then renders
// uncached with a warning).
func defaultCacheDir() string {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "throughline", "render")
	}
	return ""
}
