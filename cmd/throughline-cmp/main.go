// Command throughline-cmp is throughline's Argo CD Config Management Plugin,
// the command plugin.yaml runs: a thin client of the resident renderer
// (`throughline cmp serve`, which the sidecar entrypoint `throughline cmp
// sidecar` starts beside argocd-cmp-server). Argo CD starts it once per
// application on every new commit, so in a monorepo its start is paid
// hundreds of times per commit: it links the socket protocol
// (cmp/resident), the logger and the standard library only, no render
// path, so that a render the resident renderer holds costs one short
// process (main_test.go guards the import list and the package init
// budget).
//
// `throughline-cmp generate` reads the same flags and environment as
// `throughline cmp generate` and, with THROUGHLINE_RESIDENT_DIR (or
// --resident-dir) set, hands the Application's environment and the
// working directory to the resident renderer, then writes what it answers:
// the manifests on stdout once the whole response is in, its log lines and
// refusals on stderr, the same exit codes. Whenever the resident renderer
// gives no render (the directory unset, the socket absent or not one,
// unhealthy, too slow, dead mid-render, an internal error of its own) it
// executes throughline-cmp-render, the in-process renderer beside it, in
// its place (syscall.Exec: the same process, nothing yet written on
// stdout), after one warning on stderr when a resident renderer was
// configured. Everything it does not handle itself (--help, a flag or
// log setting it cannot use, the hidden render worker command) goes to
// throughline-cmp-render too, which answers as before.
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

	"github.com/throughline-dev/throughline/cmp/resident"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/internal/pluginclient"
)

// version is stamped at build time (-ldflags "-X main.version=..."), as
// throughline's and throughline-cmp-render's.
var version = ""

const (
	// name is the binary's name in help and usage errors; the renderer
	// is executed under it (argv[0]) and names itself so.
	name = "throughline-cmp"
	// RendererName is the in-process renderer, in the directory of this
	// executable.
	RendererName = "throughline-cmp-render"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, execRenderer)
	stop()
	os.Exit(code)
}

const usage = `throughline-cmp is throughline's Argo CD Config Management Plugin: the
command plugin.yaml runs in the repo-server sidecar. It hands the render to
the resident renderer (THROUGHLINE_RESIDENT_DIR) and runs
throughline-cmp-render, the in-process renderer beside it, when that gives
no render.

Usage:
  throughline-cmp generate [flags]   render the application in the working directory
  throughline-cmp version            print the version

Run "throughline-cmp generate --help" for the flags.
`

// renderer replaces the process with the in-process renderer, run with
// args (after argv[0]); it returns only when that failed.
type renderer func(args []string) error

// execRenderer is the renderer: throughline-cmp-render beside this
// executable, executed in this process's place with its environment and
// argv[0] throughline-cmp.
func execRenderer(args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding %s: %w", RendererName, err)
	}
	path := filepath.Join(filepath.Dir(exe), RendererName)
	if err := syscall.Exec(path, append([]string{name}, args...), os.Environ()); err != nil {
		return fmt.Errorf("running the in-process renderer %s: %w", path, err)
	}
	return nil
}

// run dispatches args and returns the exit code; it hands to the renderer
// what it does not do itself.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, render renderer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitCode(exitcode.Usagef("%s needs a command", name), stderr)
	}
	switch args[0] {
	case "generate":
		return generate(ctx, args, stdout, stderr, render)
	case "version":
		_, err := fmt.Fprintln(stdout, pluginclient.Version(version))
		return exitCode(err, stderr)
	case "help", "-h", "--help":
		_, err := fmt.Fprint(stdout, usage)
		return exitCode(err, stderr)
	}
	// The hidden render worker command, and the usage error of a command
	// of neither binary.
	return exitCode(render(args), stderr)
}

// flags are generate's flags as throughline-cmp-render reads them
// (cli.CMPGenerate.AddFlags and the three global ones; a test holds the
// two sets equal). Only those of the resident path are used here; the
// others are parsed so that a valid command line is recognised, and
// handed to the renderer as they were given.
type flags struct {
	fs              *pflag.FlagSet
	noCache         bool
	maxFileSize     int64
	residentDir     string
	residentTimeout time.Duration
	level, format   string
	timeout         time.Duration
}

func newFlags() *flags {
	f := &flags{fs: pflag.NewFlagSet(name+" generate", pflag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(io.Discard)
	fs.String("cache-dir", "", "render cache directory (env THROUGHLINE_CACHE_DIR)")
	fs.BoolVar(&f.noCache, "no-cache", false, "render every time, without the cache")
	fs.Int64("cache-max-bytes", 0, "bound of the render cache on disk")
	fs.Int64Var(&f.maxFileSize, "max-file-size", pluginclient.DefaultMaxFileSize, "refuse any input file larger than this many bytes")
	fs.StringVar(&f.residentDir, "resident-dir", os.Getenv(pluginclient.EnvResidentDir), "directory of the resident renderer's socket")
	fs.DurationVar(&f.residentTimeout, "resident-timeout", resident.DefaultTimeout, "longest wait for the resident renderer")
	fs.StringVar(&f.level, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.format, "log-format", "console", "log format on stderr: console or json")
	fs.DurationVar(&f.timeout, "timeout", 0, "give up after this long (0: no limit)")
	return f
}

// generate renders through the resident renderer, or hands args (from
// "generate" on) to the renderer: as they are when no resident renderer
// is configured or the command line is one it does not take, else with
// the resident renderer turned off and what is left of --timeout.
func generate(ctx context.Context, args []string, stdout, stderr io.Writer, render renderer) int {
	f := newFlags()
	if err := f.fs.Parse(args[1:]); err != nil || f.fs.NArg() > 0 || f.residentDir == "" {
		// --help, a usage error (the renderer prints it as before), or no
		// resident renderer: render in-process.
		return exitCode(render(args), stderr)
	}
	log, err := pluginclient.NewLogger(f.level, f.format, stderr)
	if err != nil {
		return exitCode(render(args), stderr)
	}
	var deadline time.Time
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
		deadline, _ = ctx.Deadline()
	}
	wd, err := os.Getwd()
	if err != nil {
		return exitCode(err, stderr)
	}
	lazyGC()
	done, err := pluginclient.Generate(ctx, log, pluginclient.Options{
		Dir: f.residentDir, Timeout: f.residentTimeout, WorkDir: wd, Environ: os.Environ(),
		MaxFileSize: f.maxFileSize, NoCache: f.noCache,
	}, stdout)
	if done {
		return exitCode(err, stderr)
	}
	if ctx.Err() != nil {
		// Cancelled (a signal) or out of --timeout: an in-process render
		// would end at once the same way.
		return exitCode(fmt.Errorf("rendering: %w", context.Cause(ctx)), stderr)
	}
	return exitCode(render(fallbackArgs(f, deadline)), stderr)
}

// fallbackArgs is the renderer's command line after the resident renderer
// failed: generate, the flags given except --resident-dir and --timeout,
// then the resident renderer turned off (it was just tried and warned
// about) and what is left of the --timeout budget.
func fallbackArgs(f *flags, deadline time.Time) []string {
	args := []string{"generate"}
	f.fs.Visit(func(fl *pflag.Flag) {
		if fl.Name == "resident-dir" || fl.Name == "timeout" {
			return
		}
		args = append(args, "--"+fl.Name+"="+fl.Value.String())
	})
	args = append(args, "--resident-dir=")
	if !deadline.IsZero() {
		args = append(args, "--timeout="+max(time.Until(deadline), time.Millisecond).String())
	}
	return args
}

// hitHeapLimit bounds the heap of the client, which runs without the
// garbage collector until it gets there: it lives for one response and
// frees nothing before it exits (the manifests of 2,000 Deployments are
// about 6 MiB).
const hitHeapLimit = 128 << 20

// lazyGC turns the garbage collector off up to hitHeapLimit; a GOGC or
// GOMEMLIMIT in the environment wins. The renderer, if executed, starts
// with its own settings.
func lazyGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(hitHeapLimit)
}

// exitCode maps err to its exit code and writes it on stderr as
// throughline does (cli.ExitCode; a refusal of the resident renderer is
// printed as it sent it).
func exitCode(err error, stderr io.Writer) int {
	var printed *pluginclient.PrintedError
	if errors.As(err, &printed) {
		_, _ = io.WriteString(stderr, printed.Stderr)
		return printed.Code
	}
	code := exitcode.Code(err)
	switch code {
	case exitcode.OK:
	case exitcode.Usage:
		fmt.Fprintln(stderr, "usage error:", err)
	default:
		fmt.Fprintln(stderr, "error:", err)
	}
	return code
}
