package render

import (
	"encoding/hex"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// A ReplayPlan is a trace compiled for replaying: the resident renderer
// compiles an entry's probes once and replays them on every new checkout.
//
// Replaying a cache hit mostly reads files: every input file of the render
// has a read probe (its content hash) and, for kustomize's resources, an
// abs probe of the same path (where it resolved). The plan pairs them, so
// that one resolution of the path answers both, and reads the file into a
// buffer reused across files, with the fewest system calls the checks
// allow (lstat, open, fstat, read to the end, close). Whenever that fast
// path cannot decide (a symbolic link anywhere on the path, a file that is
// not regular or above the size cap, an error), the recorded probes are
// replayed one by one as before, so a plan answers exactly as Replay over
// the probes did: content, not size or times, decides.
type ReplayPlan struct {
	files  []fileProbe
	others []Probe
}

// fileProbe is the read probe of a plain path (local, clean, no .git
// element) with a content hash, and the abs probe of the same path when the
// trace holds one saying that the path resolved to itself.
type fileProbe struct {
	path   string
	sum    [32]byte
	read   Probe
	abs    Probe
	hasAbs bool
}

// CompileReplay compiles probes for replaying.
func CompileReplay(probes []Probe) *ReplayPlan {
	rp := &ReplayPlan{}
	byPath := map[string]int{}
	rest := make([]Probe, 0, len(probes))
	for _, p := range probes {
		if p.Op == "read" && plainPath(p.Path) {
			if _, dup := byPath[p.Path]; !dup {
				if sum, ok := decodeSum(p.Result); ok {
					byPath[p.Path] = len(rp.files)
					rp.files = append(rp.files, fileProbe{path: p.Path, sum: sum, read: p})
					continue
				}
			}
		}
		rest = append(rest, p)
	}
	for _, p := range rest {
		if i, ok := byPath[p.Path]; ok && p.Op == "abs" && !rp.files[i].hasAbs && p.Result == resolvedToItself(p.Path) {
			rp.files[i].abs, rp.files[i].hasAbs = p, true
			continue
		}
		rp.others = append(rp.others, p)
	}
	return rp
}

// plainPath reports whether p, a probe's path, is local and clean and goes
// through no .git element: its absolute form is the root, a separator and
// p, and the fast path may read it.
func plainPath(p string) bool {
	if p == "" || p == "." || !filepath.IsLocal(p) || filepath.Clean(p) != p || filepath.ToSlash(p) != p {
		return false
	}
	for _, e := range strings.Split(p, "/") {
		if isGitName(e) {
			return false
		}
	}
	return true
}

// resolvedToItself is the result of an abs probe of the file p that
// resolved to itself (CleanedAbs: its directory relative to the root, then
// its name).
func resolvedToItself(p string) string { return path.Dir(p) + "\x00" + path.Base(p) }

func decodeSum(s string) (sum [32]byte, ok bool) {
	if len(s) != hex.EncodedLen(len(sum)) {
		return sum, false
	}
	if _, err := hex.Decode(sum[:], []byte(s)); err != nil {
		return sum, false
	}
	return sum, true
}

// Len is the number of probes of the plan.
func (rp *ReplayPlan) Len() int {
	n := len(rp.others)
	for _, f := range rp.files {
		n++
		if f.hasAbs {
			n++
		}
	}
	return n
}

// Replay re-runs every probe against fsys and reports whether all results are
// unchanged. Probes are independent, so large traces are spread over the
// cores; the first changed result stops every worker.
func Replay(fsys *ConfinedFS, probes []Probe) bool {
	return CompileReplay(probes).Replay(fsys)
}

// Replay reports whether every probe of the plan gives its recorded result
// on fsys (see the package function Replay).
func (rp *ReplayPlan) Replay(fsys *ConfinedFS) bool {
	steps := len(rp.files) + len(rp.others)
	workers := min(runtime.GOMAXPROCS(0), steps/256+1)
	if workers == 1 {
		var buf []byte
		for i := range steps {
			if !rp.step(fsys, i, &buf) {
				return false
			}
		}
		return true
	}
	var stale atomic.Bool
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for i := w; i < steps && !stale.Load(); i += workers {
				if !rp.step(fsys, i, &buf) {
					stale.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	return !stale.Load()
}

// step replays the i-th step: a file (read and abs probes) or another probe.
func (rp *ReplayPlan) step(fsys *ConfinedFS, i int, buf *[]byte) bool {
	if i >= len(rp.files) {
		return replayOne(fsys, rp.others[i-len(rp.files)])
	}
	f := &rp.files[i]
	// Decided, a match means the path resolved to itself, a regular file
	// of the recorded content: the abs probe's recorded result.
	if match, decided := fsys.replayRead(f.path, &f.sum, buf); decided {
		return match
	}
	return replayOne(fsys, f.read) && (!f.hasAbs || replayOne(fsys, f.abs))
}
