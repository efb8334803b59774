package cli

import (
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/policy"
)

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

// LogExceptions warns once per allow-list exception a render used; a
// Secret's values are never logged, only that it carries some.
func LogExceptions(log zerolog.Logger, exs []policy.Exception) {
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
