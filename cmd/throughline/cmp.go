package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/throughline-dev/throughline/internal/cli"
)

// EnvCacheDir overrides the default render cache directory of the sidecar.
const EnvCacheDir = cli.EnvCacheDir

func newCMPCommand(g *globals, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cmp",
		Short: "Argo CD Config Management Plugin commands (run by the repo-server sidecar)",
	}
	cmd.AddCommand(newCMPGenerateCommand(g, stdout), newCMPServeCommand(g), newCMPSidecarCommand(g))
	return cmd
}

// newCMPGenerateCommand is throughline cmp generate: the same flags and the
// same code (cli.CMPGenerate) as the lean plugin renderer
// throughline-cmp-render generate, which throughline-cmp (what plugin.yaml
// runs) executes when the resident renderer gives no render.
func newCMPGenerateCommand(g *globals, stdout io.Writer) *cobra.Command {
	var o cli.CMPGenerate
	return leaf(&cobra.Command{
		Use:   "generate",
		Short: cli.CMPGenerateShort,
		Long:  cli.CMPGenerateLong,
	}, o.AddFlags, func(ctx context.Context, _ []string) error { return o.Run(ctx, g.log, buildVersion(), stdout) })
}
