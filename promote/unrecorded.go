package promote

import (
	"context"

	"github.com/throughline-dev/throughline/repocheck"
)

// unrecorded judges a change that carries no promotion record: it is no
// promotion, so the repository check of every change (repocheck.Check)
// decides. Its differences and findings become the report's, and the
// report carries it whole (Report.Repository).
func (c *check) unrecorded(ctx context.Context, rep *Report) (*Report, error) {
	rc, err := repocheck.Check(ctx, c.r, repocheck.Request{Base: rep.Base, Head: rep.Head})
	if err != nil {
		return nil, err
	}
	rep.Repository = rc
	for _, e := range rc.Environments {
		for _, o := range e.Overlays {
			rep.Changes = append(rep.Changes, o.Changes...)
		}
	}
	for cl, n := range promotionClasses(rep) {
		rep.Classes[cl] = n
	}
	for _, f := range rc.Findings {
		rep.refuse(Finding{Rule: f.Rule, File: f.File, Object: f.Object, Field: f.Field}, "%s", f.Reason)
	}
	return rep.finish(), nil
}

// promotionClasses counts rep's changes per class.
func promotionClasses(rep *Report) map[string]int {
	m := map[string]int{}
	for _, ch := range rep.Changes {
		m[string(ch.Class)]++
	}
	return m
}
