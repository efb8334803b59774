package ledger

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// StatusRow is one record in the status.
type StatusRow struct {
	App         string          `json:"app"`
	Environment string          `json:"environment"`
	Attempt     int             `json:"attempt"`
	State       promotion.State `json:"state"`
	Digest      string          `json:"digest"`
	PromotionID string          `json:"promotionId"`
	Ref         string          `json:"ref"`
	// Branch says whether Ref is the base branch or an attempt branch that
	// is open, merged or closed.
	Branch BranchState `json:"branch"`
	// Why says why an attempt branch counts as merged or closed.
	Why       string     `json:"why,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	ExpiresAt *time.Time `json:"approvalExpiresAt,omitempty"`
	// Overrides are the record's freeze overrides as it claims them (the
	// gates verify their signatures, binding and expiry).
	Overrides []promotion.Override `json:"overrides,omitempty"`
}

// ActiveOverrides are the row's overrides not expired at now.
func (row StatusRow) ActiveOverrides(now time.Time) []promotion.Override {
	var out []promotion.Override
	for _, o := range row.Overrides {
		if o.Active(now) {
			out = append(out, o)
		}
	}
	return out
}

// BranchState is where a status row's record is.
type BranchState string

// The branch states of a status row.
const (
	// BranchBase: the record on the base branch.
	BranchBase BranchState = "base"
	// BranchOpen: an attempt branch still to be decided.
	BranchOpen BranchState = "open"
	// BranchMerged: an attempt branch merged into the base branch (its tip
	// is an ancestor of the base), or whose attempt's record reached the
	// base branch in the same or a later state (a squash or rebase merge).
	BranchMerged BranchState = "merged"
	// BranchClosed: an attempt branch whose record is HALTED or REJECTED,
	// or whose attempt a later attempt of the same environment replaced
	// on the base branch.
	BranchClosed BranchState = "closed"
)

// Status lists the promotion records (of onlyApp, when given) on the base
// branch and on the open attempt branches, each attempt in each state once,
// by app and environment.
func Status(ctx context.Context, r *gitops.Repo, onlyApp string) ([]StatusRow, error) {
	return status(ctx, r, onlyApp, false)
}

// StatusAll is Status with the merged and closed attempt branches too,
// each row saying which.
func StatusAll(ctx context.Context, r *gitops.Repo, onlyApp string) ([]StatusRow, error) {
	return status(ctx, r, onlyApp, true)
}

func status(ctx context.Context, r *gitops.Repo, onlyApp string, all bool) ([]StatusRow, error) {
	base, branches, err := statusRefs(ctx, r)
	if err != nil {
		return nil, err
	}
	onBase, err := refRecords(ctx, r, base, "", "", onlyApp)
	if err != nil {
		return nil, err
	}
	var rows []StatusRow
	seen := map[string]bool{}
	for _, rec := range onBase {
		seen[rec.PromotionID+"@"+string(rec.State)] = true
		rows = append(rows, statusRow(rec, r.Base, BranchBase, ""))
	}
	for _, b := range branches {
		merged, err := r.IsAncestor(ctx, b.tip, base)
		if err != nil {
			return nil, fmt.Errorf("status of %s: %w", b.name, err)
		}
		recs, err := refRecords(ctx, r, b.tip, b.app, b.env, onlyApp)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			if seen[rec.PromotionID+"@"+string(rec.State)] {
				continue
			}
			seen[rec.PromotionID+"@"+string(rec.State)] = true
			st, why := AttemptState(rec, onBase[recordKey(rec)], merged, r.Base)
			if st == BranchOpen || all {
				rows = append(rows, statusRow(rec, b.name, st, why))
			}
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].App != rows[j].App {
			return rows[i].App < rows[j].App
		}
		return rows[i].Environment < rows[j].Environment
	})
	return rows, nil
}

// AttemptState decides whether the record rec of an attempt branch is
// still open, given the record of the same app and environment on the base
// branch (nil: none) and whether the branch's tip is merged into it.
func AttemptState(rec, onBase *promotion.Record, merged bool, base string) (BranchState, string) {
	switch {
	case merged:
		return BranchMerged, "the branch is merged into " + base
	case onBase != nil && onBase.PromotionID == rec.PromotionID && stateRank(onBase.State) >= stateRank(rec.State):
		return BranchMerged, fmt.Sprintf("%s is %s on %s", rec.PromotionID, onBase.State, base)
	case rec.State == promotion.Halted || rec.State == promotion.Rejected:
		return BranchClosed, fmt.Sprintf("%s is %s", rec.PromotionID, rec.State)
	case onBase != nil && onBase.PromotionID != rec.PromotionID && started(rec).Before(started(onBase)):
		return BranchClosed, fmt.Sprintf("replaced on %s by the later attempt %s (%s)", base, onBase.PromotionID, onBase.State)
	}
	return BranchOpen, ""
}

// stateRank orders the states along the state machine; the final ones
// rank alike.
func stateRank(s promotion.State) int {
	switch s {
	case promotion.Candidate:
		return 0
	case promotion.Verified:
		return 1
	case promotion.Approved:
		return 2
	case promotion.Reconciling:
		return 3
	}
	return 4
}

// started is when rec's attempt was proposed (its first transition).
func started(rec *promotion.Record) time.Time {
	if len(rec.History) == 0 {
		return time.Time{}
	}
	return rec.History[0].At
}

// recordKey is the app and environment of a record, as a map key.
func recordKey(rec *promotion.Record) string { return rec.App + "/" + rec.Target.Environment }

// refRecords reads every record (of onlyApp, when given; only app/env's
// when both are given) at rev, by recordKey.
func refRecords(ctx context.Context, r *gitops.Repo, rev, app, env, onlyApp string) (map[string]*promotion.Record, error) {
	files, err := r.ListTree(ctx, rev, promotion.Dir)
	if err != nil {
		return nil, err
	}
	out := map[string]*promotion.Record{}
	for _, f := range files {
		a, e, ok := recordName(f)
		if !ok || (onlyApp != "" && a != onlyApp) || (app != "" && (a != app || e != env)) {
			continue
		}
		rec, err := promotion.ReadRecord(ctx, r, rev, a, e)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			out[recordKey(rec)] = rec
		}
	}
	return out, nil
}

// attemptRef is an attempt branch and its tip; app and env are the ones
// its name carries (<prefix><app>/<env>/<digest12>-<attempt>), "" when it
// carries none: then every record on it is read.
type attemptRef struct{ name, tip, app, env string }

// statusRefs is the tip of the base branch and every attempt branch with
// its tip, sorted by name.
func statusRefs(ctx context.Context, r *gitops.Repo) (string, []attemptRef, error) {
	base, err := r.BaseRev(ctx)
	if err != nil {
		return "", nil, err
	}
	bs, err := r.Branches(ctx, promotion.BranchPrefix+"*")
	if err != nil {
		return "", nil, err
	}
	var out []attemptRef
	for b := range bs {
		if b == r.Base {
			continue
		}
		if tip, err := r.BranchTip(ctx, b); err == nil {
			a := attemptRef{name: b, tip: tip}
			if parts := strings.Split(strings.TrimPrefix(b, promotion.BranchPrefix), "/"); len(parts) == 3 &&
				promotion.ValidName(parts[0]) && promotion.ValidName(parts[1]) {
				a.app, a.env = parts[0], parts[1]
			}
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return base, out, nil
}

// recordName is the app and environment of the record file f
// (promotion/<app>/<env>.yaml); ok is false for any other file.
func recordName(f string) (app, env string, ok bool) {
	parts := strings.Split(f, "/")
	if len(parts) != 3 || parts[0] != promotion.Dir || !strings.HasSuffix(parts[2], ".yaml") {
		return "", "", false
	}
	app, env = parts[1], strings.TrimSuffix(parts[2], ".yaml")
	return app, env, promotion.ValidName(app) && promotion.ValidName(env)
}

func statusRow(rec *promotion.Record, ref string, st BranchState, why string) StatusRow {
	row := StatusRow{App: rec.App, Environment: rec.Target.Environment, Attempt: rec.Attempt, State: rec.State, Digest: rec.Artifact.Digest,
		PromotionID: rec.PromotionID, Ref: ref, Branch: st, Why: why, Reason: rec.Reason, Overrides: rec.Overrides}
	if rec.Approval != nil {
		e := rec.Approval.ExpiresAt
		row.ExpiresAt = &e
	}
	return row
}
