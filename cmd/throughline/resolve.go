package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/registry"
)

// registryFlags are the flags of every command that talks to a registry.
type registryFlags struct {
	insecure       bool
	cacheDir       string
	noCache        bool
	concurrency    int
	requestTimeout time.Duration
}

func (r *registryFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&r.insecure, "insecure", false, "allow plain HTTP to any registry (loopback registries always may)")
	f.StringVar(&r.cacheDir, "registry-cache-dir", defaultRegistryCacheDir(), "manifest cache by digest (env "+EnvCacheDir+"/registry)")
	f.BoolVar(&r.noCache, "no-registry-cache", false, "keep no manifest cache on disk")
	f.IntVar(&r.concurrency, "concurrency", registry.DefaultConcurrency, "registry requests in flight at most")
	f.DurationVar(&r.requestTimeout, "registry-timeout", registry.DefaultTimeout, "bound of each registry operation, retries included")
}

func (r *registryFlags) client() (*registry.Client, error) {
	if r.concurrency < 1 {
		return nil, exitcode.Usagef("--concurrency %d: want at least 1", r.concurrency)
	}
	o := registry.Options{
		Insecure:    r.insecure,
		Concurrency: r.concurrency,
		Timeout:     r.requestTimeout,
		UserAgent:   "throughline/" + buildVersion(),
	}
	if !r.noCache {
		o.CacheDir = r.cacheDir
	}
	return registry.New(o)
}

func defaultRegistryCacheDir() string {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return filepath.Join(d, "registry")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "throughline", "registry")
	}
	return filepath.Join(os.TempDir(), "throughline-registry-cache")
}

// registryError gives a registry failure met by resolve, pin or drift its
// exit code: a malformed or missing reference is invalid input (4); an
// unreachable registry is already pending (5: registry.Error.ExitCode,
// the same for every command), anything else (unauthorized, a broken
// registry) is 1.
func registryError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, registry.ErrNotFound):
		return &exitcode.InvalidInput{Err: err}
	case errors.Is(err, registry.ErrInvalid):
		var re *registry.Error
		if errors.As(err, &re) && re.Op == "parse" {
			return &exitcode.InvalidInput{Err: err}
		}
	}
	return err
}

const resolveLong = `Ask the registry what each IMAGE names: its digest and media type, the config
digest of an image manifest, and for an index every child's platform, digest and
config digest. Tags are always asked of the registry; manifests are cached on
disk by digest, so a digest reference already seen costs no request.

Credentials come from the Docker config ($DOCKER_CONFIG or ~/.docker/config.json,
credential helpers included). Plain HTTP is used only for loopback registries
or with --insecure.

A Helm chart is named repo/name:version (oci://host/path/name:version or
https://host/path/name:version for an HTTP chart repository): resolve prints
its digest (the OCI manifest digest, or the sha256 of the .tgz that index.yaml
names, verified by downloading it) and the package's sha256 (docs/charts.md).

Exit codes: 4 when a reference is malformed or names nothing, 5 when a
registry cannot be reached (try again), 1 for any other failure.`

// resolveOptions are the flags of throughline resolve.
type resolveOptions struct {
	rf     registryFlags
	output string
}

func (o *resolveOptions) addFlags(f *pflag.FlagSet) {
	outputFlag(f, &o.output, "output format: table or json", "table", "json")
}

func newResolveCommand(g *globals, stdout io.Writer) *cobra.Command {
	var o resolveOptions
	cmd := leaf(&cobra.Command{
		Use:   "resolve IMAGE...",
		Short: "Resolve image references to digests, with the children of multi-arch indexes",
		Long:  resolveLong,
		Example: `  throughline resolve ghcr.io/throughline-dev/checkout:1.4.2
  throughline resolve -o json nginx:1.27 localhost:5000/app:v1
  throughline resolve oci://ghcr.io/stefanprodan/charts/podinfo:6.7.1`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return exitcode.Usagef("%s needs at least one IMAGE", cmd.CommandPath())
			}
			return nil
		},
	}, o.addFlags, func(ctx context.Context, args []string) error { return o.run(ctx, g, stdout, args) })
	o.rf.add(cmd)
	return cmd
}

func (o *resolveOptions) run(ctx context.Context, g *globals, stdout io.Writer, images []string) error {
	if charts, rest := splitChartArgs(images); len(charts) > 0 {
		if len(rest) > 0 {
			return exitcode.Usagef("resolve charts (%s) and images (%s) in separate calls", charts[0], rest[0])
		}
		return o.resolveCharts(ctx, g, stdout, charts)
	}
	c, err := o.rf.client()
	if err != nil {
		return err
	}
	var ok []*registry.Descriptor
	var errs []error
	for i, r := range c.ResolveAll(ctx, images, true) {
		if r.Err != nil {
			errs = append(errs, r.Err)
			g.log.Debug().Str("image", images[i]).Err(r.Err).Msg("not resolved")
			continue
		}
		ok = append(ok, r.Descriptor)
		g.log.Debug().Str("image", images[i]).Str("digest", r.Descriptor.Digest).Msg("resolved")
	}
	if o.output == "json" {
		if ok == nil {
			ok = []*registry.Descriptor{}
		}
		if err := writeJSON(stdout, ok); err != nil {
			return err
		}
	} else if err := registry.WriteTable(stdout, ok); err != nil {
		return err
	}
	return registryError(registry.JoinErrors(errs))
}

// writeJSONIndent writes v indented, as every -o json does.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}
