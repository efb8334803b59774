package promote

import (
	"context"
	"errors"
	"strings"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/promotion"
)

// charts is the PR gate's chart contract (a step of Check, after policy):
// a chart version or digest change is classified artifact; the charts head
// renders must be exactly the record's artifact.charts (rule
// chart-unrecorded), and those must be the ones the source environment
// verified (rule chart-unverified).
func (c *check) charts(ctx context.Context) error {
	if c.declared == nil { // policy refused the render: nothing to compare
		return nil
	}
	head := RecordCharts(c.declared.Acceptance.Spec.Charts)
	base, _, err := chartsAt(ctx, c.r, c.bt, c.rec.Target.Path)
	if err != nil {
		return err
	}
	for _, ch := range promotion.ClassifyCharts(base, head) {
		c.rep.Changes = append(c.rep.Changes, ch)
		c.rep.Classes[string(ch.Class)]++
	}
	if diff := chartDiff(c.rec.Artifact.Charts, head); len(diff) > 0 {
		c.rep.refuse(Finding{Rule: RuleChartUnrecorded, File: c.recFile, Field: "artifact.charts"},
			"the charts %s renders are not the record's artifact.charts: %s (a chart is promoted with its record: throughline promote propose)",
			c.rec.Target.Path, strings.Join(diff, "; "))
	}
	v := c.rec.VerifiedIn
	if v == nil || v.IsPriorAcceptance() {
		return nil // no source environment (evidence refuses it), or a rollback (its prior acceptance is judged by evidence)
	}
	src, err := promotion.ReadRecord(ctx, c.r, c.rep.Base, c.rec.App, v.Environment)
	if err != nil || src == nil {
		return err // no source record: evidence refuses it
	}
	want, err := sourceCharts(ctx, c.r, c.rep.Base, src)
	var re *exitcode.Refusal
	if errors.As(err, &re) {
		c.rep.refuse(Finding{Rule: re.Rule, File: promotion.RecordPath(src.App, v.Environment), Field: "artifact.charts"}, "%s", re.Reason)
		return nil
	}
	if err != nil {
		return err
	}
	if diff := chartDiff(want, c.rec.Artifact.Charts); len(diff) > 0 {
		c.rep.refuse(Finding{Rule: RuleChartUnverified, File: c.recFile, Field: "artifact.charts"},
			"the record's artifact.charts are not what %s verified (%s): the record %s", v.Environment, promotion.RecordPath(src.App, v.Environment),
			strings.Join(diff, "; "))
	}
	return nil
}

// chartLockChanged reports whether rel is the chart lock file beside the
// target's kustomization kfile: a promotion may change it (the charts step
// judges what it pins).
func chartLockChanged(rel, kfile string) bool {
	return rel == chartsource.LockPath(dirOf(kfile))
}

func dirOf(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[:i]
	}
	return "."
}

// maskChartVersions masks the version of each helmCharts entry of the
// kustomization m: a chart version change is an artifact change, judged by
// the charts step against the record, not a parameter change. Everything
// else of an entry (values, valuesInline, valuesFile, release, namespace)
// stays a parameter the policy must allow.
func maskChartVersions(m map[string]any) {
	charts, _ := m["helmCharts"].([]any)
	for _, e := range charts {
		if em, ok := e.(map[string]any); ok {
			if _, ok := em["version"]; ok {
				em["version"] = "<version>"
			}
		}
	}
}
