// Package pluginclient is the part of cmp generate that the thin plugin
// binary (cmd/throughline-cmp) links: the render through the resident
// renderer (cmp/resident's client, its response logged and written as cmp
// generate writes a render), the logger of --log-level and --log-format,
// and the version stamp. internal/cli uses the same code for the resident
// path of throughline cmp generate and the in-process renderer, so that
// both print the same lines.
//
// It links the socket protocol, zerolog, pflag and the standard library
// only: no render path, no Kubernetes types (cmd/throughline-cmp's
// TestClientImports guards it).
package pluginclient

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"

	"github.com/throughline-dev/throughline/cmp/resident"
	"github.com/throughline-dev/throughline/exitcode"
)

// EnvResidentDir names the resident renderer's directory (its socket is
// resident.SocketName inside): set, cmp generate hands its render to the
// resident process there and renders in-process only when it is absent or
// fails.
const EnvResidentDir = "THROUGHLINE_RESIDENT_DIR"

// EnvAppRevision is Argo CD's ARGOCD_APP_REVISION (cmp.EnvAppRevision),
// logged with the render.
const EnvAppRevision = "ARGOCD_APP_REVISION"

// DefaultMaxFileSize is render.DefaultMaxFileSize, the default of
// --max-file-size (a test holds them equal).
const DefaultMaxFileSize = 8 << 20

// Options are what the resident path of cmp generate sends.
type Options struct {
	// Dir is the resident renderer's directory; Timeout bounds the
	// exchange (<= 0: resident.DefaultTimeout).
	Dir     string
	Timeout time.Duration
	// WorkDir is the plugin's working directory (absolute).
	WorkDir     string
	MaxFileSize int64
	NoCache     bool
	// Environ is the plugin's environment (os.Environ()); only what a
	// render reads is sent (resident.ForwardedEnviron).
	Environ []string
}

// PrintedError is a refusal the resident renderer already formatted: the
// exit code and what to print on stderr, as it is.
type PrintedError struct {
	Code   int
	Stderr string
}

func (e *PrintedError) Error() string { return e.Stderr }

// ExitCode is the exit code of the refusal.
func (e *PrintedError) ExitCode() int { return e.Code }

// Generate hands the render to the resident renderer in o.Dir. done is
// false when it did not give one (absent, unhealthy, too slow, died
// mid-render, or an internal error of its own): nothing was written to
// stdout, this has said so on log (one warning), and the caller renders
// in-process. When done, err is the render's refusal (a *PrintedError) or
// the failure to write stdout; the manifests are written only once the
// whole response is in.
func Generate(ctx context.Context, log zerolog.Logger, o Options, stdout io.Writer) (done bool, err error) {
	c := &resident.Client{Dir: o.Dir, Timeout: o.Timeout}
	res, err := c.Generate(ctx, resident.Request{
		WorkDir: o.WorkDir, Environ: resident.ForwardedEnviron(o.Environ), MaxFileSize: o.MaxFileSize, NoCache: o.NoCache,
	})
	switch {
	case err != nil:
		log.Warn().Err(err).Msg("rendering in-process")
		return false, nil
	case res.Code == exitcode.Internal:
		log.Warn().Str("socket", resident.SocketPath(o.Dir)).Str("error", res.Stderr).
			Msg("the resident renderer failed: rendering in-process")
		return false, nil
	case res.Code != exitcode.OK:
		return true, &PrintedError{Code: res.Code, Stderr: res.Stderr}
	}
	for _, w := range res.Warnings {
		log.Warn().Str("error", w).Msg("render cache not updated")
	}
	if len(res.Exceptions) > 0 {
		var exs []Exception
		if json.Unmarshal(res.Exceptions, &exs) == nil {
			LogExceptions(log, exs)
		}
	}
	log.Info().Str("app", res.App).Str("revision", getenv(o.Environ, EnvAppRevision)).
		Str("renderedHash", res.RenderedHash).Int("objects", res.Objects).
		Bool("cached", res.CacheHit).Bool("resident", true).Msg("rendered")
	_, err = stdout.Write(res.Manifests)
	return true, err
}

// getenv is the value of key in environ (the last one, as os.Getenv).
func getenv(environ []string, key string) string {
	v := ""
	for _, kv := range environ {
		if len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			v = kv[len(key)+1:]
		}
	}
	return v
}

// Exception is an allow-list exception a render used, as the
// Acceptance's spec.exceptions holds it (v1alpha1.Exception's JSON).
type Exception struct {
	Image   string `json:"image,omitempty"`
	Pattern string `json:"pattern,omitempty"`
	Secret  string `json:"secret,omitempty"`
	Reason  string `json:"reason"`
	Object  string `json:"object,omitempty"`
	Field   string `json:"field,omitempty"`
}

// LogExceptions warns once per allow-list exception a render used; a
// Secret's values are never logged, only that it carries some.
func LogExceptions(log zerolog.Logger, exs []Exception) {
	for _, ex := range exs {
		if ex.Secret != "" {
			log.Warn().Str("secret", ex.Secret).Str("object", ex.Object).Str("field", ex.Field).
				Str("reason", ex.Reason).Msg("allow-list exception used: Secret carries values in the desired state (not shown)")
			continue
		}
		log.Warn().Str("image", ex.Image).Str("object", ex.Object).Str("field", ex.Field).
			Str("pattern", ex.Pattern).Str("reason", ex.Reason).Msg("allow-list exception used: image not pinned by digest")
	}
}

// NewLogger is the logger of --log-level and --log-format on stderr: JSON
// lines, or zerolog's console form (colored on a terminal only). A level or
// format it does not know is a usage error naming the flag.
func NewLogger(level, format string, stderr io.Writer) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		return zerolog.Nop(), exitcode.Usagef("--log-level %q: %v", level, err)
	}
	w := stderr
	switch format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: stderr, NoColor: !IsTerminal(stderr), TimeFormat: time.RFC3339}
	default:
		return zerolog.Nop(), exitcode.Usagef("--log-format %q: want console or json", format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Version returns stamped (set at build time with -ldflags "-X
// main.version=..."), else the module version from the build info, else
// "dev". It is part of the render cache's key and of every Acceptance.
func Version(stamped string) string {
	if stamped != "" {
		return stamped
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
