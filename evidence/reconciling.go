package evidence

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// Reconciling fetches the branch and returns its tip with every promotion
// record there that is RECONCILING, in Git's order. The fetch runs under
// the sink's write lock (it never races this replica's writes); the
// records are read at the fixed tip without it. A record that does not
// parse is skipped and reported in bad (by path), never fatal: the others
// are still returned.
func (s *GitSink) Reconciling(ctx context.Context) (tip string, recs []*promotion.Record, bad map[string]error, err error) {
	s.mu.Lock()
	tip, err = s.Repo.BranchTip(ctx, s.Branch)
	s.mu.Unlock()
	if err != nil {
		return "", nil, nil, fmt.Errorf("reading the tip of %s: %w", s.Branch, err)
	}
	repo := &gitops.Repo{Repo: s.Repo}
	files, err := s.Repo.ListTree(ctx, tip, promotion.Dir)
	if err != nil {
		return "", nil, nil, err
	}
	for _, f := range files {
		app, env, ok := recordName(f)
		if !ok {
			continue
		}
		rec, err := promotion.ReadRecord(ctx, repo, tip, app, env)
		if err != nil {
			if bad == nil {
				bad = map[string]error{}
			}
			bad[f] = err
			continue
		}
		if rec != nil && rec.State == promotion.Reconciling {
			recs = append(recs, rec)
		}
	}
	return tip, recs, bad, nil
}

// recordName is the app and environment of promotion/<app>/<env>.yaml.
func recordName(f string) (app, env string, ok bool) {
	parts := strings.Split(f, "/")
	if len(parts) != 3 || parts[0] != promotion.Dir || path.Ext(parts[2]) != ".yaml" {
		return "", "", false
	}
	app, env = parts[1], strings.TrimSuffix(parts[2], ".yaml")
	if !promotion.ValidName(app) || !promotion.ValidName(env) || promotion.RecordPath(app, env) != f {
		return "", "", false
	}
	return app, env, true
}
