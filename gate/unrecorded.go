package gate

import (
	"context"
)

// unrecorded judges a change that carries no promotion record: it is no
// promotion, so the repository check of every change (Check)
// decides. Its differences and findings become the report's, and the
// report carries it whole (Report.Repository).
func (c *promotionCheck) unrecorded(ctx context.Context, rep *PromotionReport) (*PromotionReport, error) {
	rc, err := CheckRepository(ctx, c.r, Request{Base: rep.Base, Head: rep.Head})
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
func promotionClasses(rep *PromotionReport) map[string]int {
	m := map[string]int{}
	for _, ch := range rep.Changes {
		m[string(ch.Class)]++
	}
	return m
}
