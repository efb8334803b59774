package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/sandbox"
)

func TestRenderWorkerEnvironment(t *testing.T) {
	cases := []struct {
		budget, memory string
		wantBudget     time.Duration
		wantMemory     int64
		wantErr        string // the variable the usage error names
	}{
		{wantBudget: 0, wantMemory: 0},
		{budget: "20s", memory: "512", wantBudget: 20 * time.Second, wantMemory: 512 << 20},
		{budget: "forever", wantErr: EnvRenderBudget},
		{budget: "-5s", wantErr: EnvRenderBudget},
		{budget: "0s", wantErr: EnvRenderBudget},
		{budget: "24h", wantErr: EnvRenderBudget},
		{memory: "8", wantErr: EnvRenderMemory},
		{memory: "1Gi", wantErr: EnvRenderMemory},
		{memory: "99999999999999999999", wantErr: EnvRenderMemory},
	}
	for _, c := range cases {
		t.Run(c.budget+"/"+c.memory, func(t *testing.T) {
			t.Setenv(EnvRenderBudget, c.budget)
			t.Setenv(EnvRenderMemory, c.memory)
			w, err := RenderWorker(render.Worker{Args: []string{render.WorkerCommand}}, zerolog.Nop())
			if c.wantErr != "" {
				if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v (exit %d), want a usage error naming %s", err, exitcode.Code(err), c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w.Budget != c.wantBudget || w.MemoryLimit != c.wantMemory {
				t.Errorf("budget %s memory %d, want %s %d", w.Budget, w.MemoryLimit, c.wantBudget, c.wantMemory)
			}
		})
	}
}

// TestRenderWorkerWarnsUnconfined: the warning names each missing
// guarantee and why (a kernel without Landlock cannot be had here, so the
// report is made by hand).
func TestRenderWorkerWarnsUnconfined(t *testing.T) {
	var buf bytes.Buffer
	w, err := RenderWorker(render.Worker{}, zerolog.New(&buf))
	if err != nil {
		t.Fatal(err)
	}
	w.OnSandbox(sandbox.Report{LandlockABI: 3, Enforced: []sandbox.Guarantee{sandbox.Files, sandbox.Sockets},
		Missing: map[sandbox.Guarantee]string{sandbox.TCP: "needs Landlock ABI 4, the kernel has 3"}})
	out := buf.String()
	for _, want := range []string{`"level":"warn"`, `"landlockABI":3`, `"tcp":"needs Landlock ABI 4, the kernel has 3"`} {
		if !strings.Contains(out, want) {
			t.Errorf("warning %s lacks %s", out, want)
		}
	}
}
