package ledger

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/throughline-dev/throughline/breakglass"
	"github.com/throughline-dev/throughline/exitcode"
)

// Pause is one break-glass episode of an app in an environment: a
// reconciliation paused by `throughline breakglass pause`, as the history
// of its record holds it.
type Pause struct {
	// At is when reconciliation was paused (the record's pausedAt).
	At time.Time
	// Commit is the oldest commit holding the episode's record.
	Commit string
}

// Pauses reads every break-glass episode of app in env in the history of
// rev, oldest first: the distinct pausedAt of the versions of its record
// (breakglass/<env>/<app>.yaml; one file holds the latest episode, Git the
// others). invalid lists the versions that cannot be used, each naming its
// file, commit and why; they never count.
func (rd *Reader) Pauses(ctx context.Context, rev, app, env string) (pauses []Pause, invalid []error, err error) {
	file := breakglass.Path(env, app)
	commits, err := rd.Repo.FileHistory(ctx, rev, file)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the history of %s at %s: %w", file, rev, err)
	}
	seen := map[time.Time]int{}
	for _, c := range commits { // newest first
		rec, err := breakglass.ReadRecord(ctx, rd.Repo, c, app, env)
		switch {
		case exitcode.Code(err) == exitcode.Invalid:
			invalid = append(invalid, fmt.Errorf("%s at %s: %w", file, c, err))
			continue
		case err != nil:
			return nil, nil, err
		case rec == nil || rec.PausedAt.IsZero():
			continue // deleted in this commit
		}
		at := rec.PausedAt.UTC()
		if i, ok := seen[at]; ok {
			pauses[i].Commit = c // the same episode, committed earlier
			continue
		}
		seen[at] = len(pauses)
		pauses = append(pauses, Pause{At: at, Commit: c})
	}
	slices.SortFunc(pauses, func(a, b Pause) int { return a.At.Compare(b.At) })
	return pauses, invalid, nil
}
