package breakglass

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
)

// RulePause is the rule of the refusals about the pause record: no active
// pause to write back or resume, a second pause, a write-back not merged.
const RulePause = "breakglass"

// AppEnv is the application and environment the record belongs to.
func (r *Record) AppEnv() (app, env string) { return r.App, r.Environment }

// ReadRecord reads the pause record of app in env at rev with the strict
// reader of the GitOps repository (nil when there is none). A record that
// does not parse, or names another app or environment than its path, is
// invalid input (exit 4).
func ReadRecord(ctx context.Context, r *gitops.Repo, rev, app, env string) (*Record, error) {
	rec, found, err := gitops.ReadNamed(ctx, r, rev, Path(env, app), app, env, Parse)
	if err != nil || !found {
		return nil, err // the reader names the file
	}
	return rec, nil
}

// CommitRecord writes rec, and the extra files beside it, on branch by
// compare-and-swap (never forced); check runs on the record at every tip
// tried (nil when there is none), so a retry re-reads what is really there.
// It returns the commit.
func CommitRecord(ctx context.Context, r *gitops.Repo, branch string, rec *Record, extra map[string][]byte, msg string,
	check func(prev *Record) error) (string, error) {
	data, err := rec.Marshal()
	if err != nil {
		return "", err
	}
	return r.Swap(ctx, branch, func(ctx context.Context, tip string) (map[string][]byte, string, error) {
		prev, err := ReadRecord(ctx, r, tip, rec.App, rec.Environment)
		if err != nil {
			return nil, "", err
		}
		if err := check(prev); err != nil {
			return nil, "", err
		}
		files := map[string][]byte{Path(rec.Environment, rec.App): data}
		for p, d := range extra {
			files[p] = d
		}
		return files, msg, nil
	})
}

// Merged returns base when it contains the record's write-back (an
// ancestor, or every file of the write-back in base as the write-back wrote
// it: a squash or rebase merge), else a refusal naming the write-back.
func Merged(ctx context.Context, r *gitops.Repo, rec *Record, base string) (string, error) {
	if rec.Writeback == nil {
		return "", exitcode.Refuse(RulePause, "%s/%s has no write-back: run throughline breakglass writeback and merge it, or resume with --force --reason",
			rec.App, rec.Environment)
	}
	wb := rec.Writeback.Commit
	notMerged := exitcode.Refuse(RulePause, "the write-back %s (branch %s) is not merged into %s: merge it first, or resume with --force --reason",
		wb, rec.Writeback.Branch, r.Base)
	if _, err := r.Resolve(ctx, wb); err != nil {
		return "", notMerged // a commit the repository does not have is not merged
	}
	anc, err := r.IsAncestor(ctx, wb, base)
	if err != nil {
		return "", fmt.Errorf("is the write-back %s merged into %s: %w", wb, base, err)
	}
	if anc {
		return base, nil
	}
	same, err := sameFiles(ctx, r, wb, base)
	if err != nil {
		return "", fmt.Errorf("is the write-back %s merged into %s: %w", wb, base, err)
	}
	if same {
		return base, nil
	}
	return "", notMerged
}

// sameFiles reports whether every file commit changed is in base as
// commit wrote it (false when it changed none).
func sameFiles(ctx context.Context, r *gitops.Repo, commit, base string) (bool, error) {
	files, err := r.Changed(ctx, commit+"^", commit)
	if err != nil || len(files) == 0 {
		return false, err
	}
	for _, f := range files {
		rel, ok := r.Rel(f)
		if !ok {
			return false, nil // outside the GitOps root: no write-back writes there
		}
		a, aerr := readOrAbsent(ctx, r, commit, rel)
		b, berr := readOrAbsent(ctx, r, base, rel)
		if err := errors.Join(aerr, berr); err != nil {
			return false, err
		}
		if (a == nil) != (b == nil) || !bytes.Equal(a, b) {
			return false, nil
		}
	}
	return true, nil
}

// readOrAbsent reads file at rev; nil when it is not there.
func readOrAbsent(ctx context.Context, r *gitops.Repo, rev, file string) ([]byte, error) {
	data, err := r.ReadFile(ctx, rev, file)
	if errors.Is(err, gitrepo.ErrNotFound) {
		return nil, nil
	}
	if data == nil && err == nil {
		data = []byte{}
	}
	return data, err
}

// SourceCommit turns the record's source revision as the controller
// reported it ("<sha>", Flux "main@sha1:<sha>") into a commit of the
// repository; a record without one, or one the repository does not have,
// is refused.
func SourceCommit(ctx context.Context, r *gitops.Repo, rec *Record) (string, error) {
	rev := rec.SourceRevision
	if i := strings.LastIndex(rev, ":"); i >= 0 {
		rev = rev[i+1:]
	}
	if rev == "" {
		return "", exitcode.Refuse(RulePause, "the pause record has no source revision: the desired state before the pause is unknown")
	}
	sha, err := r.Resolve(ctx, rev)
	if err != nil {
		return "", exitcode.Refuse(RulePause, "source revision %s of the pause record is not in the repository: %v", rev, err)
	}
	return sha, nil
}
