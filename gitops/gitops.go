// Package gitops is the GitOps repository at a revision: the documents
// throughline keeps in it (promotion records, evidence, pause records, the
// policy) read with one strict reader, compare-and-swap updates of a
// branch, and a revision exported to disk where an overlay is rendered.
// It runs git only through package gitrepo; the record kinds build their
// readers on [Read].
package gitops

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/render"
)

// PushAttempts bounds the fetch-rebase-retry loop of a contended push.
const PushAttempts = 5

// Repo is the GitOps repository a command works on.
type Repo struct {
	*gitrepo.Repo
	// Base is the branch promotions start from (the remote's default
	// branch, else the current one).
	Base string
	// Charts gives the remote Helm charts that the trees of this repository
	// pin (render.Options.Charts); nil refuses every remote chart.
	Charts render.ChartSource

	// parsed are the documents ReadParsed parsed at commits.
	parsedMu sync.Mutex
	parsed   map[docKey]any
}

// Open opens the GitOps repository at dir and fetches its remote, so that
// every read sees what the remote has (a fetch that fails is not decided:
// exit 5).
func Open(ctx context.Context, dir string) (*Repo, error) {
	r, err := open(ctx, dir)
	if err != nil {
		return nil, err
	}
	if err := r.Fetch(ctx); err != nil {
		return nil, exitcode.NotDecided(err)
	}
	r.Base = r.DefaultBranch(ctx)
	return r, nil
}

// OpenLocal opens the GitOps repository at dir as it is (no fetch): the PR
// job reads the revisions CI checked out.
func OpenLocal(ctx context.Context, dir string) (*Repo, error) {
	r, err := open(ctx, dir)
	if err != nil {
		return nil, err
	}
	r.Base = r.DefaultBranch(ctx)
	return r, nil
}

// Clone makes or reopens an in-process clone of the GitOps repository
// (gitrepo.Clone: no git command line needed), fetched, its base branch the
// remote's HEAD branch. It is the notifier's repository in the release
// image, which has no git.
func Clone(ctx context.Context, opts gitrepo.CloneOptions) (*Repo, error) {
	r, err := gitrepo.Clone(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Repo{Repo: r, Base: r.DefaultBranch(ctx)}, nil
}

func open(ctx context.Context, dir string) (*Repo, error) {
	if dir == "" {
		return nil, exitcode.Usagef("--repo DIR is required")
	}
	r, err := gitrepo.Open(ctx, dir)
	if err != nil {
		return nil, exitcode.InvalidFile(dir, err)
	}
	return &Repo{Repo: r}, nil
}

// BaseRev is the commit of the base branch (the remote's after a fetch).
func (r *Repo) BaseRev(ctx context.Context) (string, error) {
	if r.Remote != "" {
		if sha, err := r.Resolve(ctx, "refs/remotes/"+r.Remote+"/"+r.Base); err == nil {
			return sha, nil
		}
	}
	if sha, err := r.Resolve(ctx, "refs/heads/"+r.Base); err == nil {
		return sha, nil
	}
	return r.Resolve(ctx, "HEAD")
}

// Swap commits a change on the tip of branch by compare-and-swap (retried
// on a lost race, never forced): change gets the tip and returns the files
// to write and the commit message. It returns the new commit.
func (r *Repo) Swap(ctx context.Context, branch string,
	change func(ctx context.Context, tip string) (map[string][]byte, string, error)) (string, error) {
	return r.Update(ctx, branch, PushAttempts, change)
}

// Named is a document that says which app and environment it belongs to.
type Named interface {
	AppEnv() (app, env string)
}

// Parser parses a document read from file.
type Parser[T any] func(file string, data []byte) (T, error)

// Read reads the document at the GitOps-root-relative file at rev with
// parse. found is false when there is no such file. A document that does
// not parse is invalid input (exit 4) naming the file; any other failure
// (git itself) is an error.
func Read[T any](ctx context.Context, r *Repo, rev, file string, parse Parser[T]) (doc T, found bool, err error) {
	data, err := r.ReadFile(ctx, rev, file)
	if errors.Is(err, gitrepo.ErrNotFound) {
		return doc, false, nil
	}
	if errors.Is(err, gitrepo.ErrSymlink) {
		return doc, false, exitcode.InvalidFile(file, err)
	}
	if err != nil {
		return doc, false, err
	}
	doc, err = parse(file, data)
	if err != nil {
		if exitcode.Code(err) == exitcode.Invalid {
			return doc, false, err // the parser named the file and field
		}
		return doc, false, exitcode.InvalidFile(file, err)
	}
	return doc, true, nil
}

// ReadNamed is Read for a document that must belong to app in env (it
// lives at their path): one naming another app or environment is invalid
// input, never read as theirs.
func ReadNamed[T Named](ctx context.Context, r *Repo, rev, file, app, env string, parse Parser[T]) (doc T, found bool, err error) {
	doc, found, err = Read(ctx, r, rev, file, parse)
	if err != nil || !found {
		return doc, found, err
	}
	if a, e := doc.AppEnv(); a != app || e != env {
		var zero T
		return zero, false, exitcode.InvalidFile(file,
			fmt.Errorf("names app %q environment %q, but lives at the path of %s/%s", a, e, app, env))
	}
	return doc, true, nil
}

// docKey names a document parsed at a commit: the commit, the file and the
// Go type it was parsed into.
type docKey struct {
	commit, file string
	typ          reflect.Type
}

// maxParsed bounds the documents a Repo keeps parsed (the notifier's
// repository lives as long as the process).
const maxParsed = 64

// ReadParsed is Read at a commit, memoized: a document at a commit (a
// full object name, not a branch) never changes, so every reader of the
// same file at the same commit in one Repo (the gate's steps, the ledger,
// the trust policy) parses it once. Each caller gets its own copy (clone):
// no caller sees another's edits. At any other revision it is Read.
func ReadParsed[T any](ctx context.Context, r *Repo, rev, file string, parse Parser[T], clone func(T) T) (doc T, found bool, err error) {
	if !gitrepo.IsObjectName(rev) {
		return Read(ctx, r, rev, file, parse)
	}
	k := docKey{commit: rev, file: file, typ: reflect.TypeFor[T]()}
	r.parsedMu.Lock()
	v, ok := r.parsed[k]
	r.parsedMu.Unlock()
	if ok {
		p := v.(parsedDoc[T])
		if !p.found {
			return doc, false, nil
		}
		return clone(p.doc), true, nil
	}
	if doc, found, err = Read(ctx, r, rev, file, parse); err != nil {
		return doc, found, err
	}
	kept := parsedDoc[T]{found: found}
	if found {
		kept.doc = clone(doc)
	}
	r.parsedMu.Lock()
	if r.parsed == nil || len(r.parsed) >= maxParsed {
		r.parsed = map[docKey]any{}
	}
	r.parsed[k] = kept
	r.parsedMu.Unlock()
	return doc, found, nil
}

// parsedDoc is one memoized document.
type parsedDoc[T any] struct {
	doc   T
	found bool
}
