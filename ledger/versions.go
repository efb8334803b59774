package ledger

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// Version is a promotion record as one commit holds it.
type Version struct {
	Commit string
	// rec is the record, nil when the commit deleted it or it cannot be
	// used (Invalid): the one every Reader shares, so it is never handed
	// out (Record copies it) and this package only reads it.
	rec *promotion.Record
	// Invalid says why this version cannot be used (it does not parse, or
	// names another app or environment): it never counts as anything.
	Invalid error
}

// Record is the record, nil when the commit deleted it or it cannot be
// used (Invalid): the caller's own copy, which it may change without
// changing what any other reader of the version sees.
func (v Version) Record() *promotion.Record { return deepCopy(v.rec) }

// PromotionID is the record's promotion id, "" when the commit deleted it
// or it cannot be used: what a reader that walks versions looking for one
// attempt reads, without a copy.
func (v Version) PromotionID() string {
	if v.rec == nil {
		return ""
	}
	return v.rec.PromotionID
}

// Transitions is how many transitions the record's history holds (0 when
// there is no record): how far its attempt went.
func (v Version) Transitions() int {
	if v.rec == nil {
		return 0
	}
	return len(v.rec.History)
}

// SameRecord reports whether v and o hold equal records (both none too).
func (v Version) SameRecord(o Version) bool { return reflect.DeepEqual(v.rec, o.rec) }

// Reader is the one reader of promotion records through Git history
// (TestOnlyLedgerReadsHistory): every version of a record, newest first.
// Every Reader remembers each version it read in one cache the package
// shares (what a commit id names never changes, and the GitOps root is in
// the key), so that the gates and the web view, each with its own Reader,
// parse a version once per process, and a later revision costs only what
// is new (issue 37). Each record it returns is a copy (Version.Record):
// no caller can change what another reads. It is safe for concurrent use; a zero Reader with Repo set
// is ready.
type Reader struct {
	Repo *gitops.Repo
}

// versions is the cache every Reader shares.
var versions struct {
	mu sync.Mutex
	m  map[versionKey]Version
}

type versionKey struct{ root, commit, app, env string }

// maxCached bounds the versions remembered (then forgotten all at once).
const maxCached = 50000

// Versions reads every version of app's record in env in the history of
// rev, newest first: the commits that changed the record file.
func (rd *Reader) Versions(ctx context.Context, rev, app, env string) ([]Version, error) {
	var out []Version
	err := rd.EachVersion(ctx, rev, app, env, func(v Version) bool {
		out = append(out, v)
		return true
	})
	return out, err
}

// EachVersion is Versions one version at a time, newest first, until f
// returns false: a caller that needs the newest few reads (and parses)
// no more.
func (rd *Reader) EachVersion(ctx context.Context, rev, app, env string, f func(Version) bool) error {
	file := promotion.RecordPath(app, env)
	var verr error
	err := rd.Repo.EachFileHistory(ctx, rev, file, func(c string) bool {
		v, err := rd.Version(ctx, c, app, env)
		if err != nil {
			verr = err
			return false
		}
		return f(v)
	})
	if err != nil {
		return fmt.Errorf("reading the history of %s at %s: %w", file, rev, err)
	}
	return verr
}

// Version reads app's record in env at commit (remembered).
func (rd *Reader) Version(ctx context.Context, commit, app, env string) (Version, error) {
	k := versionKey{rd.Repo.Prefix, commit, app, env}
	versions.mu.Lock()
	v, ok := versions.m[k]
	versions.mu.Unlock()
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
		v = Version{Commit: commit, rec: rec}
	}
	if !promotion.ValidRevision(commit) {
		return v, nil // a name may move: only a commit id is remembered
	}
	versions.mu.Lock()
	if versions.m == nil || len(versions.m) >= maxCached {
		versions.m = map[versionKey]Version{}
	}
	versions.m[k] = v
	versions.mu.Unlock()
	return v, nil
}
