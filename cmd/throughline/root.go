package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/cli"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/render/helmrender"
	"github.com/throughline-dev/throughline/tracing"
)

// version is stamped at build time (-ldflags "-X main.version=...").
var version = ""

// buildVersion returns the stamped version, else the module version from the
// build info, else "dev".
func buildVersion() string { return cli.Version(version) }

// globals are the flags every command shares.
type globals struct {
	logLevel  string
	logFormat string
	timeout   time.Duration
	log       zerolog.Logger
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &globals{}
	render.UseWorker(renderWorker)
	render.UseHelm(helmrender.Engine{})
	root := newRootCommand(g, stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Traces (docs/operations.md#traces): off unless OTEL_EXPORTER_OTLP_*
	// names an endpoint; a TRACEPARENT in the environment makes the gate's
	// and the notifier's spans children of the caller's.
	ctx = tracing.FromEnvironment(ctx)
	shutdown, err := tracing.Setup(ctx, "throughline")
	if err != nil {
		return exitCode(exitcode.Usagef("tracing: %v", err), stderr)
	}
	defer func() {
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = shutdown(flush) // spans not exported in time are lost, never the command's result
	}()
	err = root.ExecuteContext(ctx)
	return exitCode(err, stderr)
}

const rootLong = `throughline renders GitOps applications, refuses images that are not pinned by
digest, records a canonical hash of the rendered object set, and carries that
identity through promotion, verification and rollback.`

func newRootCommand(g *globals, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:               "throughline",
		Short:             "Prove that the same immutable artifact travels from staging to production",
		Long:              rootLong,
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return g.setup(cmd, stderr) },
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitcode.UsageError{Err: err} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	pf.StringVar(&g.logFormat, "log-format", "console", "log format on stderr: console or json")
	pf.DurationVar(&g.timeout, "timeout", 0, "give up after this long (0: no limit)")
	root.AddCommand(
		newRenderCommand(g, stdout),
		newCMPCommand(g, stdout),
		newVersionCommand(stdout),
		newResolveCommand(g, stdout),
		newPinCommand(g, stdout),
		newDriftCommand(g, stdout),
		newVerifyCommand(g, stdout),
		newServeCommand(g),
		newReportCommand(g, stdout),
		newPromoteCommand(g, stdout),
		newCheckCommand(g, stdout),
		newRollbackCommand(g, stdout),
		newAdoptCommand(g, stdout),
		newBreakglassCommand(g, stdout),
		newTrustCommand(stdout),
		newPolicyCommand(g, stdout),
		newRenderWorkerCommand(os.Stdin, stdout),
	)
	return root
}

// setup applies the global flags before any command runs: the logger on
// stderr and the --timeout of the command's context.
func (g *globals) setup(cmd *cobra.Command, stderr io.Writer) error {
	log, err := cli.NewLogger(g.logLevel, g.logFormat, stderr)
	if err != nil {
		return err
	}
	g.log = log
	w, err := cli.RenderWorker(*renderWorker, log)
	if err != nil {
		return err
	}
	render.UseWorker(w)
	if g.timeout > 0 {
		ctx, cancel := context.WithTimeout(cmd.Context(), g.timeout)
		cobra.OnFinalize(cancel)
		cmd.SetContext(ctx)
	}
	return nil
}

func newVersionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print throughline's version",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(stdout, buildVersion())
			return err
		},
	}
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return exitcode.Usagef("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

func maxArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return exitcode.Usagef("%s takes at most %d argument(s), got %d", cmd.CommandPath(), n, len(args))
		}
		return nil
	}
}

// leaf completes a command that runs something: its positional arguments
// (none unless cmd says), its flags (addFlags may be nil) and run, which is
// given the command's context (with --timeout applied) and its arguments.
func leaf(cmd *cobra.Command, addFlags func(*pflag.FlagSet), run func(ctx context.Context, args []string) error) *cobra.Command {
	if cmd.Args == nil {
		cmd.Args = noArgs
	}
	cmd.RunE = func(c *cobra.Command, args []string) error { return run(c.Context(), args) }
	if addFlags != nil {
		addFlags(cmd.Flags())
	}
	return cmd
}

// outputFlag adds -o/--output to f: one of choices (the first is the
// default), any other value a usage error when the flags are parsed.
func outputFlag(f *pflag.FlagSet, p *string, usage string, choices ...string) {
	*p = choices[0]
	f.VarP(&choiceValue{p: p, choices: choices}, "output", "o", usage)
}

// choiceValue is a string flag that takes one of its choices.
type choiceValue struct {
	p       *string
	choices []string
}

func (c *choiceValue) String() string { return *c.p }

func (c *choiceValue) Type() string { return "string" }

func (c *choiceValue) Set(v string) error {
	if !slices.Contains(c.choices, v) {
		return fmt.Errorf("want %s", strings.Join(c.choices, " or "))
	}
	*c.p = v
	return nil
}
