package promote

import (
	"context"
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
	Reason      string          `json:"reason,omitempty"`
	ExpiresAt   *time.Time      `json:"approvalExpiresAt,omitempty"`
}

// Status lists every promotion record (of onlyApp, when given) on the base
// branch and on the open attempt branches, each attempt in each state once,
// by app and environment.
func Status(ctx context.Context, r *gitops.Repo, onlyApp string) ([]StatusRow, error) {
	refs, names, err := statusRefs(ctx, r)
	if err != nil {
		return nil, err
	}
	var rows []StatusRow
	seen := map[string]bool{}
	for _, ref := range names {
		files, err := r.ListTree(ctx, refs[ref], promotion.Dir)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			a, env, ok := recordName(f)
			if !ok || (onlyApp != "" && a != onlyApp) {
				continue
			}
			rec, err := promotion.ReadRecord(ctx, r, refs[ref], a, env)
			if err != nil {
				return nil, err
			}
			if rec == nil || seen[rec.PromotionID+"@"+string(rec.State)] {
				continue
			}
			seen[rec.PromotionID+"@"+string(rec.State)] = true
			rows = append(rows, statusRow(rec, env, ref))
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

// statusRefs maps the base branch and every attempt branch to its tip,
// with the names sorted.
func statusRefs(ctx context.Context, r *gitops.Repo) (map[string]string, []string, error) {
	refs := map[string]string{}
	base, err := r.BaseRev(ctx)
	if err != nil {
		return nil, nil, err
	}
	refs[r.Base] = base
	bs, err := r.Branches(ctx, promotion.BranchPrefix+"*")
	if err != nil {
		return nil, nil, err
	}
	for b := range bs {
		if tip, err := r.BranchTip(ctx, b); err == nil {
			refs[b] = tip
		}
	}
	var names []string
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	return refs, names, nil
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

func statusRow(rec *promotion.Record, env, ref string) StatusRow {
	row := StatusRow{App: rec.App, Environment: env, Attempt: rec.Attempt, State: rec.State, Digest: rec.Artifact.Digest,
		PromotionID: rec.PromotionID, Ref: ref, Reason: rec.Reason}
	if rec.Approval != nil {
		e := rec.Approval.ExpiresAt
		row.ExpiresAt = &e
	}
	return row
}
