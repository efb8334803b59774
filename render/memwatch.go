package render

import (
	"os"
	"runtime/metrics"
	"time"
)

// workerMemoryExit is the exit code of a render child that stopped itself
// at its memory budget (watchMemory). The parent reads it as
// ErrMemoryBudget whatever the child managed to print.
const workerMemoryExit = 86

// memoryWatchInterval is how often watchMemory samples the runtime.
const memoryWatchInterval = time.Millisecond

// kernelMemoryLimit is the child's RLIMIT_DATA for a memory budget: half
// as much again, the backstop for an allocation that jumps past the watch
// in one step, plus what the binary's own data and bss take (about 34 MiB
// for throughline-cmp-render, which the kernel counts and the runtime does not).
func kernelMemoryLimit(budget int64) int64 { return budget/2*3 + 64<<20 }

// watchMemory makes the child's memory budget its own decision instead of
// the kernel's. When the kernel refuses the Go runtime memory
// (RLIMIT_DATA), the runtime does not fail one way: "out of memory",
// "cannot allocate memory", or, about one run in eight with Go 1.26's
// garbage collector, a SIGSEGV in the collector itself (measured: 60 runs
// of a 60 MiB index.yaml under a 256 MiB limit). A verdict read from the
// runtime's last words is a guess.
//
// The budget is the memory the Go runtime has mapped
// (/memory/classes/total:bytes: heap, stacks, metadata). A goroutine
// samples it every memoryWatchInterval; past the budget it ends
// the process with workerMemoryExit, before any response is written. The
// kernel's limit stays above it (kernelMemoryLimit) so that a render
// growing through the budget meets the watch, not the kernel. No soft
// limit is set for the garbage collector: near a small budget it would
// collect without pause and turn a refusal into a time-out (measured:
// cmd/throughline TestMemoryBudget, 3000 Deployments at 64 MiB, ran into
// its 3-minute budget). stop ends the watch.
func watchMemory(budget int64) (stop func()) {
	done := make(chan struct{})
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
		tick := time.NewTicker(memoryWatchInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > uint64(budget) {
				os.Exit(workerMemoryExit)
			}
		}
	}()
	return func() { close(done) }
}
