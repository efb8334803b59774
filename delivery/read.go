package delivery

import (
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/throughline-dev/throughline/environment"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
)

// Options say what Read reads.
type Options struct {
	// Rev is the revision read ("": the base branch as the remote has it).
	Rev string
	// Since starts the window: an attempt counts when its last event (its
	// last history entry, or its evidence's time) is at or after it. Zero:
	// all of the history.
	Since time.Time
	// Now is the report's time (zero: time.Now()).
	Now time.Time
}

// Reader reads reports from a repository. It remembers every record
// version and commit time it read (Git's history does not change under
// a commit id), so that a report of a later revision reads only what is
// new: what serve needs when the branch moves. It is safe for concurrent
// use; a zero Reader (with Repo set) is ready.
type Reader struct {
	Repo *gitops.Repo

	mu      sync.Mutex
	records *ledger.Reader // the record versions, through the ledger
	times   map[string]time.Time
}

// maxCached bounds the commit times remembered (then forgotten all at once).
const maxCached = 200000

// Read is (&Reader{Repo: repo}).Read.
func Read(ctx context.Context, repo *gitops.Repo, opts Options) (*Report, error) {
	return (&Reader{Repo: repo}).Read(ctx, opts)
}

// attempt is the furthest version of one attempt's record, its file and
// its evidence.
type attempt struct {
	rec  *promotion.Record
	file string
	// commit is the oldest commit holding rec (for an ACCEPTED record, the
	// notifier's commit of the acceptance and its evidence).
	commit string
	ev     *evidence.Record
}

// Read reads the report of opts.Rev: every version of every record at
// that revision in its history, and the evidence files there. A file
// that cannot be used is listed in the report's Problems; a git that
// fails is an error.
func (rd *Reader) Read(ctx context.Context, opts Options) (*Report, error) {
	rev, err := rd.revision(ctx, opts.Rev)
	if err != nil {
		return nil, err
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	rep := &Report{SchemaVersion: SchemaVersion, Revision: rev, Until: opts.Now.UTC().Truncate(time.Second), Apps: []*Figures{}}
	if !opts.Since.IsZero() {
		s := opts.Since.UTC()
		rep.Since = &s
	}
	reg, err := promotion.ReadRegistry(ctx, rd.Repo, rev)
	if err != nil {
		if exitcode.Code(err) != exitcode.Invalid {
			return nil, err
		}
		rep.problem(nil, Problem{File: promotion.PolicyFile, Reason: err.Error()})
		reg, _ = promotion.Registry(nil)
	}
	rep.Registry = reg.Configured()
	pairs := map[[2]string]*Figures{}
	fig := func(app, env string) *Figures {
		k := [2]string{app, env}
		if pairs[k] == nil {
			pairs[k] = newFigures(app, env)
			if !opts.Since.IsZero() {
				pairs[k].window = opts.Now.Sub(opts.Since)
			}
		}
		return pairs[k]
	}
	attempts, err := rd.attempts(ctx, rev, rep, fig)
	if err != nil {
		return nil, err
	}
	if err := rd.evidence(ctx, rev, rep, attempts, fig); err != nil {
		return nil, err
	}
	if err := rd.measure(ctx, rep, reg, attempts, opts.Since, fig); err != nil {
		return nil, err
	}
	if err := rd.dora(ctx, rev, rep, attempts, opts.Since, fig); err != nil {
		return nil, err
	}
	for _, f := range pairs {
		f.summarize()
		rep.Apps = append(rep.Apps, f)
	}
	sort.Slice(rep.Apps, func(i, j int) bool {
		a, b := rep.Apps[i], rep.Apps[j]
		return a.App < b.App || a.App == b.App && a.Environment < b.Environment
	})
	return rep, nil
}

// revision is the commit of rev ("": the base branch as the remote has it).
func (rd *Reader) revision(ctx context.Context, rev string) (string, error) {
	var commit string
	var err error
	if rev == "" {
		rev = rd.Repo.Base
		commit, err = rd.Repo.BaseRev(ctx)
	} else {
		commit, err = rd.Repo.Resolve(ctx, rev)
	}
	if err != nil {
		return "", fmt.Errorf("reading the delivery metrics at %s: %w", rev, err)
	}
	return commit, nil
}

// problem lists p, counting it for f (nil: for no app).
func (r *Report) problem(f *Figures, p Problem) {
	r.Invalid++
	r.Problems = append(r.Problems, p)
	if f != nil {
		f.Invalid++
	}
}

// attempts reads every version of every record at rev in its history and
// keeps, per promotionId, the version that went furthest (the longest
// history; its newest version when several went as far), as first
// committed (versions come newest first).
func (rd *Reader) attempts(ctx context.Context, rev string, rep *Report, fig func(app, env string) *Figures) (map[string]*attempt, error) {
	files, err := rd.Repo.ListTree(ctx, rev, promotion.Dir)
	if err != nil {
		return nil, fmt.Errorf("listing %s at %s: %w", promotion.Dir, rev, err)
	}
	// The version that went furthest per promotionId, copied once found.
	type furthest struct {
		v    ledger.Version
		file string
	}
	best := map[string]*furthest{}
	for _, file := range files {
		app, env, ok := names(file, promotion.Dir, ".yaml")
		if !ok {
			continue
		}
		versions, err := rd.ledger().Versions(ctx, rev, app, env)
		if err != nil {
			return nil, err
		}
		for _, v := range versions {
			if v.Invalid != nil {
				rep.problem(fig(app, env), Problem{File: file, Commit: v.Commit, Reason: v.Invalid.Error()})
				continue
			}
			id := v.PromotionID()
			if id == "" {
				continue // deleted in this commit
			}
			switch a := best[id]; {
			case a == nil || v.Transitions() > a.v.Transitions():
				best[id] = &furthest{v: v, file: file}
			case v.SameRecord(a.v):
				a.v.Commit = v.Commit // the same version, committed earlier
			}
		}
	}
	out := make(map[string]*attempt, len(best))
	for id, a := range best {
		out[id] = &attempt{rec: a.v.Record(), file: a.file, commit: a.v.Commit}
	}
	return out, nil
}

// ledger is rd's reader of record versions, made on first use.
func (rd *Reader) ledger() *ledger.Reader {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.records == nil {
		rd.records = &ledger.Reader{Repo: rd.Repo}
	}
	return rd.records
}

// commitTime is the committer time of commit (remembered); ok is false
// when the repository does not hold it.
func (rd *Reader) commitTime(ctx context.Context, commit string) (time.Time, bool, error) {
	rd.mu.Lock()
	t, ok := rd.times[commit]
	rd.mu.Unlock()
	if ok {
		return t, true, nil
	}
	t, err := rd.Repo.CommitTime(ctx, commit)
	if errors.Is(err, gitrepo.ErrNotFound) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	rd.mu.Lock()
	if rd.times == nil || len(rd.times) >= maxCached {
		rd.times = map[string]time.Time{}
	}
	rd.times[commit] = t
	rd.mu.Unlock()
	return t, true, nil
}

// evidence reads every evidence file at rev and gives it to its attempt.
// A file that does not parse, names another promotion than its file name,
// belongs to no attempt or disagrees with the attempt's record is listed;
// so is the evidence of an ACCEPTED attempt that does not prove it
// (ledger.Prove, the gates' answer) or was changed after the acceptance.
func (rd *Reader) evidence(ctx context.Context, rev string, rep *Report, attempts map[string]*attempt,
	fig func(app, env string) *Figures) error {
	files, err := rd.Repo.ListTree(ctx, rev, evidence.Dir)
	if err != nil {
		return fmt.Errorf("listing %s at %s: %w", evidence.Dir, rev, err)
	}
	keys, err := ledger.EvidenceKeysAt(ctx, rd.Repo, rev)
	if exitcode.Code(err) == exitcode.Invalid {
		rep.problem(nil, Problem{File: promotion.PolicyFile, Reason: err.Error()})
		keys, err = &evidence.Keys{File: "evidenceSigners"}, nil // unusable: no evidence counts
	}
	if err != nil {
		return err
	}
	for _, file := range files {
		env, app, id, ok := evidenceName(file)
		if !ok {
			continue
		}
		ev, found, err := ledger.ReadEvidence(ctx, rd.Repo, rev, file, app, env, keys)
		if c := exitcode.Code(err); err != nil && (c == exitcode.Invalid || c == exitcode.Refused) {
			rep.problem(nil, Problem{File: file, Reason: err.Error()})
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s at %s: %w", file, rev, err)
		}
		if !found {
			continue
		}
		a := attempts[ev.PromotionID]
		var why string
		switch {
		case ev.PromotionID != id:
			why = fmt.Sprintf("it is the evidence of %s, its file names %s", ev.PromotionID, id)
		case a == nil:
			why = fmt.Sprintf("no version of %s in the history of %s is promotion %s", promotion.RecordPath(app, env), rev, id)
		default:
			why = consistent(ev, a.rec)
			if why == "" && a.rec.State == promotion.Accepted {
				if why, err = rd.prove(ctx, a, ev, keys); err != nil {
					return err
				}
			}
		}
		if why != "" {
			var f *Figures
			if a != nil {
				f = fig(a.rec.App, a.rec.Target.Environment)
			}
			rep.problem(f, Problem{File: file, Reason: why})
			continue
		}
		a.ev = ev
	}
	return nil
}

// consistent says why ev is not the evidence of rec's decision ("" when
// it is, or rec is ACCEPTED: prove judges that).
func consistent(ev *evidence.Record, rec *promotion.Record) string {
	switch {
	case ev.ArtifactDigest != rec.Artifact.Digest:
		return fmt.Sprintf("it is for digest %s, the record promotes %s", ev.ArtifactDigest, rec.Artifact.Digest)
	case ev.Decision != rec.State:
		return fmt.Sprintf("it decides %s, the record of %s is %s", ev.Decision, rec.PromotionID, rec.State)
	}
	return ""
}

// prove says why ev, a's evidence at the report's revision, does not
// prove a's acceptance ("" when it does): what the gates decide
// (ledger.Prove, in the commit that recorded the acceptance), and the file
// unchanged since. An error is a failure to read Git.
func (rd *Reader) prove(ctx context.Context, a *attempt, ev *evidence.Record, keys *evidence.Keys) (string, error) {
	proved, why, err := ledger.Prove(ctx, rd.Repo, a.commit, a.rec, keys)
	if c := exitcode.Code(err); err != nil && (c == exitcode.Invalid || c == exitcode.Refused) {
		return fmt.Sprintf("at %s, where %s was ACCEPTED: %v", gitrepo.Short(a.commit), a.file, err), nil
	}
	switch {
	case err != nil:
		return "", fmt.Errorf("proving the acceptance of %s at %s: %w", a.rec.PromotionID, a.commit, err)
	case why != "":
		return why, nil
	case !reflect.DeepEqual(proved, ev):
		return fmt.Sprintf("it was changed after the acceptance at %s", gitrepo.Short(a.commit)), nil
	}
	return "", nil
}

// names is the two names of dir/<a>/<b><ext> (ok false for any other
// file, or invalid app or environment names).
func names(f, dir, ext string) (string, string, bool) {
	parts := strings.Split(f, "/")
	if len(parts) != 3 || parts[0] != dir || path.Ext(parts[2]) != ext {
		return "", "", false
	}
	a, b := parts[1], strings.TrimSuffix(parts[2], ext)
	return a, b, promotion.ValidName(a) && promotion.ValidName(b)
}

// evidenceName is the environment, app and promotionId of
// evidence/<env>/<app>/<promotionId>.json.
func evidenceName(f string) (env, app, id string, ok bool) {
	parts := strings.Split(f, "/")
	if len(parts) != 4 || parts[0] != evidence.Dir || path.Ext(parts[3]) != ".json" {
		return "", "", "", false
	}
	env, app, id = parts[1], parts[2], strings.TrimSuffix(parts[3], ".json")
	return env, app, id, promotion.ValidName(env) && promotion.ValidName(app) && id != ""
}

// registered reports whether reg declares rec's overlay path as its app's
// in its environment.
func registered(reg *environment.Registry, rec *promotion.Record) bool {
	app, env, _, ok := reg.Locate(rec.Target.Path)
	return ok && app == rec.App && env == rec.Target.Environment
}
