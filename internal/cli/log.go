package cli

import (
	"io"

	"github.com/rs/zerolog"

	"github.com/throughline-dev/throughline/internal/pluginclient"
	"github.com/throughline-dev/throughline/policy"
)

// NewLogger is the logger of --log-level and --log-format on stderr: JSON
// lines, or zerolog's console form (colored on a terminal only). A level or
// format it does not know is a usage error naming the flag. It is
// pluginclient.NewLogger, which the thin plugin binary links.
func NewLogger(level, format string, stderr io.Writer) (zerolog.Logger, error) {
	return pluginclient.NewLogger(level, format, stderr)
}

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool { return pluginclient.IsTerminal(w) }

// Version returns stamped (set at build time with -ldflags "-X
// main.version=..."), else the module version from the build info, else
// "dev". It is part of the render cache's key and of every Acceptance.
func Version(stamped string) string { return pluginclient.Version(stamped) }

// LogExceptions warns once per allow-list exception a render used; a
// Secret's values are never logged, only that it carries some
// (pluginclient.LogExceptions: the resident path logs the same lines).
func LogExceptions(log zerolog.Logger, exs []policy.Exception) {
	out := make([]pluginclient.Exception, 0, len(exs))
	for _, ex := range exs {
		out = append(out, pluginclient.Exception{
			Image: ex.Image, Pattern: ex.Pattern, Secret: ex.Secret, Reason: ex.Reason, Object: ex.Object, Field: ex.Field,
		})
	}
	pluginclient.LogExceptions(log, out)
}
