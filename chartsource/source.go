package chartsource

import (
	"context"
	"errors"
	"fmt"

	"github.com/throughline-dev/throughline/exitcode"
)

// Source gives the renderer the remote charts of a repository: only what
// the lock files pin, verified. FS is the render's filesystem confined to
// the repository root (*render.ConfinedFS): the lock file is read through
// it, so a lock file that is a symlink out of the root is refused, and a
// traced render's cache key covers the lock file.
type Source struct {
	FS      FileReader
	Fetcher *Fetcher
}

// Chart returns the chart package (.tgz bytes) of ref, pinned by the lock
// file in dir (the directory of the kustomization or Chart.yaml, relative to
// the repository root). A version range is refused (rule
// floating-chart-version), a chart the lock does not pin too (rule
// unpinned-chart), a package that is not the pinned one too (rule
// chart-digest-mismatch): each exit 3 naming the lock file.
func (s Source) Chart(ctx context.Context, dir string, ref Ref) ([]byte, error) {
	file := LockPath(dir)
	if err := ref.Validate(); err != nil {
		if IsFloating(err) {
			return nil, &exitcode.Refusal{Rule: RuleFloatingChartVersion, File: file, Object: ref.String(), Err: err}
		}
		return nil, &exitcode.InvalidInput{File: file, Err: fmt.Errorf("chart %s: %w", ref, err)}
	}
	lock, err := ReadLock(s.FS, dir)
	if err != nil {
		return nil, err
	}
	e, ok := lock.Find(ref)
	if !ok {
		reason := fmt.Sprintf("remote chart %s is not pinned by digest; run throughline pin %s", ref, dir)
		if vs := lock.other(ref); len(vs) > 0 {
			reason = fmt.Sprintf("remote chart %s is not pinned by digest (the lock pins version(s) %v); run throughline pin %s", ref, vs, dir)
		}
		return nil, &exitcode.Refusal{Rule: RuleUnpinnedChart, File: file, Object: ref.String(), Reason: reason}
	}
	data, err := s.Fetcher.Fetch(ctx, e)
	if err != nil {
		var r *exitcode.Refusal
		if errors.As(err, &r) && r.File == "" {
			r.File, r.Field = file, fmt.Sprintf("charts[%d].digest", lock.index(e))
		}
		return nil, err
	}
	return data, nil
}

// index is the position of e in the lock.
func (l *Lock) index(e Entry) int {
	for i, x := range l.Charts {
		if x == e {
			return i
		}
	}
	return -1
}
