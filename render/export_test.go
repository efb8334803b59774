package render

import "context"

// OnRead sets a hook every read of fsys that passes the context check calls.
func OnRead(fsys *ConfinedFS, f func(string)) { fsys.onRead = f }

// BuildUnchecked runs krusty for a as Build does, in w (in-process when w
// is nil), without refusing remote entries first: it exercises what the
// child process stops when an entry slips past the refusal.
func BuildUnchecked(ctx context.Context, a *App, w *Worker) ([]Object, error) {
	if w == nil {
		return a.buildKustomization(ctx)
	}
	return a.buildInWorker(ctx, w)
}

// ParsePeakRSS is parsePeakRSS.
var ParsePeakRSS = parsePeakRSS

// ReplayEach replays probes one by one, without a plan's fast path: what
// Replay answered before plans, to compare a plan with.
func ReplayEach(fsys *ConfinedFS, probes []Probe) bool {
	for _, p := range probes {
		if !replayOne(fsys, p) {
			return false
		}
	}
	return true
}

// PlanFiles is the number of file probes of rp and how many of them carry
// their abs probe.
func PlanFiles(rp *ReplayPlan) (files, paired int) {
	for _, f := range rp.files {
		if f.hasAbs {
			paired++
		}
	}
	return len(rp.files), paired
}
