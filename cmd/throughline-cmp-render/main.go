// Command throughline-cmp-render is the in-process renderer of throughline's
// Argo CD Config Management Plugin: `throughline-cmp-render generate` is
// `throughline cmp generate` (the same flags, environment, output, exit
// codes and messages: both run cli.CMPGenerate) in a binary that links only
// what a render needs. plugin.yaml runs throughline-cmp, the thin client of
// the resident renderer, which executes this binary (it lies beside it)
// whenever the resident renderer gives no render: THROUGHLINE_RESIDENT_DIR
// unset, its socket absent, unhealthy, or the resident process dead
// mid-render. Argo CD starts the plugin once per application on every new
// commit, so its fixed cost is paid hundreds of times per commit in a
// monorepo: this binary links no cobra, no Kubernetes client, no controller
// runtime, no Prometheus, no Lua and no JSON Schema, and a cache hit costs
// little more than reading the inputs (main_test.go guards the import list
// and the package init budget).
//
// It re-executes itself (render.WorkerCommand) as the child process that
// runs krusty under the render's memory and time budget.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/cli"
	"github.com/throughline-dev/throughline/render"
)

// version is stamped at build time (-ldflags "-X main.version=..."), as
// throughline's: it keys the render cache and is stamped in the Acceptance.
var version = ""

// name is the binary's name in help and usage errors: throughline-cmp,
// the command plugin.yaml runs, which executes this binary under its own
// name (argv[0]) when it renders in-process; throughline-cmp-render when
// run by that name.
var name = "throughline-cmp"

func main() {
	if filepath.Base(os.Args[0]) == "throughline-cmp-render" {
		name = "throughline-cmp-render"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `throughline-cmp-render is the in-process renderer of throughline's Argo CD
Config Management Plugin: throughline-cmp, the command plugin.yaml runs,
executes it beside itself when the resident renderer gives no render.

Usage:
  throughline-cmp-render generate [flags]   render the application in the working directory
  throughline-cmp-render version            print the version

Run "throughline-cmp-render generate --help" for the flags.
`

// run dispatches args and returns the exit code; errors go to stderr as
// throughline prints them (cli.ExitCode).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	render.UseWorker(&render.Worker{Args: []string{render.WorkerCommand}, HelmPath: render.Beside("throughline")})
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return cli.ExitCode(exitcode.Usagef("%s needs a command", name), stderr)
	}
	switch args[0] {
	case "generate":
		return cli.ExitCode(generate(ctx, args[1:], stdout, stderr), stderr)
	case render.WorkerCommand:
		// The child of a render (render.Worker): hidden, as in throughline.
		return cli.ExitCode(render.ServeWorker(ctx, stdin, stdout), stderr)
	case "version":
		_, err := fmt.Fprintln(stdout, cli.Version(version))
		return cli.ExitCode(err, stderr)
	case "help", "-h", "--help":
		_, err := fmt.Fprint(stdout, usage)
		return cli.ExitCode(err, stderr)
	}
	return cli.ExitCode(exitcode.Usagef("unknown command %q for %s", args[0], name), stderr)
}

// generate is throughline-cmp generate: throughline's global flags that
// apply to it (--log-level, --log-format, --timeout) and cmp generate's.
func generate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o cli.CMPGenerate
	var level, format string
	var timeout time.Duration
	fs := pflag.NewFlagSet(name+" generate", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	fs.StringVar(&level, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&format, "log-format", "console", "log format on stderr: console or json")
	fs.DurationVar(&timeout, "timeout", 0, "give up after this long (0: no limit)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			_, err = fmt.Fprintf(stdout, "%s\n\nUsage:\n  %s generate [flags]\n\nFlags:\n%s", cli.CMPGenerateLong, name, fs.FlagUsages())
			return err
		}
		return &exitcode.UsageError{Err: err}
	}
	if fs.NArg() > 0 {
		return exitcode.Usagef("%s generate takes no arguments, got %q", name, fs.Args())
	}
	log, err := cli.NewLogger(level, format, stderr)
	if err != nil {
		return err
	}
	w, err := cli.RenderWorker(render.Worker{Args: []string{render.WorkerCommand}, HelmPath: render.Beside("throughline")}, log)
	if err != nil {
		return err
	}
	render.UseWorker(w)
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	o.OnMiss = lazyGC()
	return o.Run(ctx, log, cli.Version(version), stdout)
}

// hitHeapLimit bounds the heap of a cache hit, which runs without the
// garbage collector until it gets there (a hit on 2,000 objects allocates
// about 60 MiB).
const hitHeapLimit = 128 << 20

// lazyGC turns the garbage collector off for the cache lookup, up to
// hitHeapLimit: the process lives for one render, and a hit frees almost
// nothing before it exits, so collecting is wasted work (a quarter of a
// warm hit's CPU on 2,000 objects). It returns the function that turns it
// back on as before, called when the cache misses and the render runs. A
// GOGC or GOMEMLIMIT in the environment wins: then it does nothing.
func lazyGC() func() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(hitHeapLimit)
	return func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(percent)
	}
}
