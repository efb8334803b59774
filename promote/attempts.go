package promote

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
)

// stopped reports whether rec's attempt ended without being accepted
// (HALTED or REJECTED): the same digest then makes a new attempt.
func stopped(rec *promotion.Record) bool {
	return rec != nil && (rec.State == promotion.Halted || rec.State == promotion.Rejected)
}

// isOpen decides whether the attempt branch at tip, holding rec, is still
// open against the base branch at baseRev (onBase: its record of the same
// app and environment, nil when none): not merged into it, its record not
// final, not replaced by a later attempt on it. A branch without a record
// counts as open (nothing says it finished). why says why it is not.
func isOpen(ctx context.Context, r *gitops.Repo, baseRev, tip string, rec, onBase *promotion.Record) (open bool, why string, err error) {
	if rec == nil {
		return true, "", nil
	}
	merged, err := r.IsAncestor(ctx, tip, baseRev)
	if err != nil {
		return false, "", fmt.Errorf("is attempt %s merged: %w", rec.PromotionID, err)
	}
	st, why := ledger.AttemptState(rec, onBase, merged, r.Base)
	return st == ledger.BranchOpen, why, nil
}

// AttemptBranch finds the branch to update: the given one, else the only
// open attempt branch of app/env. Finished attempts (merged into the base
// branch, HALTED, REJECTED, replaced) are not counted; the refusal when
// none or several are open names them.
func AttemptBranch(ctx context.Context, r *gitops.Repo, branch, app, env string) (string, error) {
	if branch != "" {
		return branch, nil
	}
	open, finished, err := attemptBranches(ctx, r, app, env)
	if err != nil {
		return "", err
	}
	switch len(open) {
	case 0:
		note := ""
		if len(finished) > 0 {
			note = fmt.Sprintf(" (finished: %s)", strings.Join(finished, "; "))
		}
		return "", exitcode.Usagef("no open attempt branch %s%s/%s/*%s: run promote propose, or name one with --branch",
			promotion.BranchPrefix, app, env, note)
	case 1:
		return open[0], nil
	}
	return "", exitcode.Usagef("several open attempt branches for %s/%s (%s): name one with --branch", app, env, strings.Join(open, ", "))
}

// attemptBranches sorts the attempt branches of app/env into open ones and
// finished ones (each with why), by name.
func attemptBranches(ctx context.Context, r *gitops.Repo, app, env string) (open, finished []string, err error) {
	baseRev, err := r.BaseRev(ctx)
	if err != nil {
		return nil, nil, err
	}
	onBase, err := promotion.ReadRecord(ctx, r, baseRev, app, env)
	if err != nil {
		return nil, nil, err
	}
	bs, names, err := attemptBranchTips(ctx, r, app, env)
	if err != nil {
		return nil, nil, err
	}
	for _, b := range names {
		rec, err := branchRecord(ctx, r, b, app, env)
		if err != nil {
			return nil, nil, err
		}
		ok, why, err := isOpen(ctx, r, baseRev, bs[b], rec, onBase)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			open = append(open, b)
		} else {
			finished = append(finished, b+": "+why)
		}
	}
	return open, finished, nil
}

// closeMerged deletes the attempt branches of app/env that are merged into
// the records branch, whose record (onRecords) is now there: the branch of
// a finished attempt is never counted as open again. It returns the deleted
// branches and, for each that could not be deleted, why (the record is
// committed: a leftover branch is only clutter, which the next run deletes).
func closeMerged(ctx context.Context, r *gitops.Repo, recordsRev string, onRecords *promotion.Record) (closed, failed []string, err error) {
	app, env := onRecords.App, onRecords.Target.Environment
	bs, names, err := attemptBranchTips(ctx, r, app, env)
	if err != nil {
		return nil, nil, err
	}
	for _, b := range names {
		rec, err := branchRecord(ctx, r, b, app, env)
		if err != nil || rec == nil {
			continue // not an attempt this can judge: left alone
		}
		merged, err := r.IsAncestor(ctx, bs[b], recordsRev)
		if err != nil {
			return nil, nil, fmt.Errorf("is %s merged: %w", b, err)
		}
		if st, _ := ledger.AttemptState(rec, onRecords, merged, r.Base); st != ledger.BranchMerged {
			continue
		}
		if err := r.DeleteBranch(ctx, b, bs[b]); err != nil && !errors.Is(err, gitrepo.ErrNotFound) {
			failed = append(failed, fmt.Sprintf("%s: %v", b, err))
			continue
		}
		closed = append(closed, b)
	}
	return closed, failed, nil
}

// attemptBranchTips lists the attempt branches of app/env with their tips,
// and their names in order.
func attemptBranchTips(ctx context.Context, r *gitops.Repo, app, env string) (map[string]string, []string, error) {
	bs, err := r.Branches(ctx, promotion.BranchPrefix+app+"/"+env+"/*")
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(bs))
	for b := range bs {
		names = append(names, b)
	}
	sort.Strings(names)
	return bs, names, nil
}
