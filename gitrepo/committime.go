package gitrepo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CommitTime is the committer time of the commit rev (for a merge commit a
// forge made: when the pull request was merged), in UTC. A commit the
// repository does not hold wraps ErrNotFound.
func (r *Repo) CommitTime(ctx context.Context, rev string) (time.Time, error) {
	if m := r.reader(); m != nil {
		defer m.lock()()
		h, err := m.resolve(rev)
		if err != nil {
			return time.Time{}, fmt.Errorf("commit time of %s: %w", rev, err)
		}
		c, err := m.repo.CommitObject(h)
		if err != nil {
			return time.Time{}, fmt.Errorf("commit time of %s: %w", rev, err)
		}
		return c.Committer.When.UTC(), nil
	}
	if strings.HasPrefix(rev, "-") || rev == "" {
		return time.Time{}, fmt.Errorf("commit time of %q: %w", rev, ErrNotFound)
	}
	if ok, err := r.hasCommit(ctx, rev); err != nil || !ok {
		if err == nil {
			err = ErrNotFound
		}
		return time.Time{}, fmt.Errorf("commit time of %s: %w", rev, err)
	}
	out, err := r.run(ctx, nil, "log", "-1", "--format=%ct", "--end-of-options", rev+"^{commit}", "--")
	if err != nil {
		return time.Time{}, fmt.Errorf("commit time of %s: %w", rev, err)
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("commit time of %s: %q: %w", rev, strings.TrimSpace(out), err)
	}
	return time.Unix(sec, 0).UTC(), nil
}
