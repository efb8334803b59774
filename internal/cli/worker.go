package cli

import (
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/sandbox"
)

// EnvRenderBudget sets the wall and CPU budget of one render (a Go
// duration, at most MaxRenderBudget); unset: render.DefaultBudget. In the
// Argo CD sidecar it is the container's environment, not the
// Application's (an Application's plugin env arrives prefixed ARGOCD_ENV_
// and cannot set it).
const EnvRenderBudget = "THROUGHLINE_RENDER_BUDGET"

// MaxRenderBudget is the largest budget EnvRenderBudget may set.
const MaxRenderBudget = 30 * time.Minute

// EnvRenderMemory sets the memory cap of one render child in MiB
// (RLIMIT_DATA, 16 to 16384); unset: render.DefaultMaxMemory.
const EnvRenderMemory = "THROUGHLINE_RENDER_MEMORY_MIB"

// RenderWorker is w with its budget from EnvRenderBudget, its memory from
// EnvRenderMemory, the child's sandbox report logged at debug level, and a
// warning,
// logged once per process, when the kernel cannot give the render child
// one of the sandbox's guarantees. A budget that does not parse is a usage
// error naming the variable.
func RenderWorker(w render.Worker, log zerolog.Logger) (*render.Worker, error) {
	if v := os.Getenv(EnvRenderBudget); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > MaxRenderBudget {
			return nil, exitcode.Usagef("%s=%q: want a duration above 0 and at most %s", EnvRenderBudget, v, MaxRenderBudget)
		}
		w.Budget = d
	}
	if v := os.Getenv(EnvRenderMemory); v != "" {
		mib, err := strconv.Atoi(v)
		if err != nil || mib < 16 || mib > 16384 {
			return nil, exitcode.Usagef("%s=%q: want a whole number of MiB from 16 to 16384", EnvRenderMemory, v)
		}
		w.MemoryLimit = int64(mib) << 20
	}
	w.OnSandbox = func(rep sandbox.Report) {
		log.Debug().Int("landlockABI", rep.LandlockABI).Dur("took", rep.Took).Msg("render sandbox: " + rep.String())
		if len(rep.Missing) > 0 {
			unconfinedOnce.Do(func() { warnUnconfined(log, rep) })
		}
	}
	return &w, nil
}

// unconfinedOnce says once per process that the kernel cannot confine
// renders fully.
var unconfinedOnce sync.Once

func warnUnconfined(log zerolog.Logger, rep sandbox.Report) {
	ev := log.Warn().Int("landlockABI", rep.LandlockABI)
	for g, why := range rep.Missing {
		ev = ev.Str(string(g), why)
	}
	ev.Msg("this kernel cannot confine renders fully; the render child keeps its other guards")
}
