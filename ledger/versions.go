package ledger

import (
	"context"
	"fmt"
	"sync"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// Version is a promotion record as one commit holds it.
type Version struct {
	Commit string
	// Record is the record, nil when the commit deleted it or it cannot be
	// used (Invalid).
	Record *promotion.Record
	// Invalid says why this version cannot be used (it does not parse, or
	// names another app or environment): it never counts as anything.
	Invalid error
}

// Reader is the one reader of promotion records through Git history
// (TestOnlyLedgerReadsHistory): every version of a record, newest first.
// It remembers each version it read (history does not change under a
// commit id), so that a later revision costs only what is new. It is safe
// for concurrent use; a zero Reader with Repo set is ready.
type Reader struct {
	Repo *gitops.Repo

	mu       sync.Mutex
	versions map[versionKey]Version
}

type versionKey struct{ commit, app, env string }

// maxCached bounds the versions remembered (then forgotten all at once).
const maxCached = 200000

// Versions reads every version of app's record in env in the history of
// rev, newest first: the commits that changed the record file.
func (rd *Reader) Versions(ctx context.Context, rev, app, env string) ([]Version, error) {
	file := promotion.RecordPath(app, env)
	commits, err := rd.Repo.FileHistory(ctx, rev, file)
	if err != nil {
		return nil, fmt.Errorf("reading the history of %s at %s: %w", file, rev, err)
	}
	out := make([]Version, 0, len(commits))
	for _, c := range commits {
		v, err := rd.Version(ctx, c, app, env)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Version reads app's record in env at commit (remembered).
func (rd *Reader) Version(ctx context.Context, commit, app, env string) (Version, error) {
	k := versionKey{commit, app, env}
	rd.mu.Lock()
	v, ok := rd.versions[k]
	rd.mu.Unlock()
	if ok {
		return v, nil
	}
	rec, err := promotion.ReadRecord(ctx, rd.Repo, commit, app, env)
	switch {
	case exitcode.Code(err) == exitcode.Invalid:
		v = Version{Commit: commit, Invalid: err}
	case err != nil:
		return Version{}, err
	default:
		v = Version{Commit: commit, Record: rec}
	}
	rd.mu.Lock()
	if rd.versions == nil || len(rd.versions) >= maxCached {
		rd.versions = map[versionKey]Version{}
	}
	rd.versions[k] = v
	rd.mu.Unlock()
	return v, nil
}
