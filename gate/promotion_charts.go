package gate

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	sigyaml "sigs.k8s.io/yaml"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/promotion"
)

// charts is the PR gate's chart contract (a step of Check, after policy):
// a chart version or digest change is classified artifact; the charts head
// renders must be exactly the record's artifact.charts (rule
// chart-unrecorded), and those must be the ones the source environment
// verified (rule chart-unverified).
func (c *promotionCheck) charts(ctx context.Context) error {
	if c.declared == nil { // policy refused the render: nothing to compare
		return nil
	}
	head := artifactCharts(RecordCharts(c.declared.Acceptance.Spec.Charts), c.rec.Target.Path)
	base, _, err := chartsAt(ctx, c.r, c.bt, c.rec.Target.Path)
	if err != nil {
		return err
	}
	base = artifactCharts(base, c.rec.Target.Path)
	for _, ch := range promotion.ClassifyCharts(base, head) {
		c.rep.Changes = append(c.rep.Changes, ch)
		c.rep.Classes[string(ch.Class)]++
	}
	if diff := chartDiff(artifactCharts(c.rec.Artifact.Charts, c.rec.Target.Path), head); len(diff) > 0 {
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
	want, err := SourceCharts(ctx, c.r, c.rep.Base, src)
	var re *exitcode.Refusal
	if errors.As(err, &re) {
		c.rep.refuse(Finding{Rule: re.Rule, File: promotion.RecordPath(src.App, v.Environment), Field: "artifact.charts"}, "%s", re.Reason)
		return nil
	}
	if err != nil {
		return err
	}
	if diff := chartDiff(want, artifactCharts(c.rec.Artifact.Charts, c.rec.Target.Path)); len(diff) > 0 {
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

// chartFileChanges lists the fields of the chart app's Chart.yaml file
// that differ between the two trees, the version of a remote dependency
// left out when head sets an exact version (a chart version change, judged
// by the charts step against the record). Any other field, a dependency
// added, removed or renamed, its repository, alias or condition changed, or
// a version range is a change the gate refuses.
func chartFileChanges(ctx context.Context, bt, ht *gitops.Tree, file string) []string {
	if ctx.Err() != nil {
		return []string{"<cancelled>"}
	}
	a, b := loadChartFile(bt, file), loadChartFile(ht, file)
	ad, _ := a["dependencies"].([]any)
	bd, _ := b["dependencies"].([]any)
	var out []string
	if len(ad) != len(bd) {
		out = append(out, "dependencies")
	} else {
		for i := range bd {
			am, _ := ad[i].(map[string]any)
			bm, _ := bd[i].(map[string]any)
			if am == nil || bm == nil {
				if !reflect.DeepEqual(ad[i], bd[i]) {
					out = append(out, fmt.Sprintf("dependencies[%d]", i))
				}
				continue
			}
			out = append(out, mapChanges(fmt.Sprintf("dependencies[%d].", i), am, bm, promotableVersion(am, bm))...)
		}
	}
	delete(a, "dependencies")
	delete(b, "dependencies")
	return append(out, mapChanges("", a, b, false)...)
}

// promotableVersion reports whether the version change of dependency a ->
// b is one a promotion writes: a remote dependency (same repository and
// name) moved to an exact version.
func promotableVersion(a, b map[string]any) bool {
	repo, _ := b["repository"].(string)
	v, ok := b["version"].(string)
	return ok && chartsource.IsRemote(repo) && chartsource.ExactVersion(v) == nil &&
		reflect.DeepEqual(a["repository"], b["repository"]) && reflect.DeepEqual(a["name"], b["name"])
}

// mapChanges lists prefix+key for each key whose value differs between a
// and b, the key version left out when skipVersion.
func mapChanges(prefix string, a, b map[string]any, skipVersion bool) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		if k == "version" && skipVersion {
			continue
		}
		if !reflect.DeepEqual(a[k], b[k]) {
			out = append(out, prefix+k)
		}
	}
	sort.Strings(out)
	return out
}

// loadChartFile reads the Chart.yaml at file (nil when it cannot be read).
func loadChartFile(tree *gitops.Tree, file string) map[string]any {
	data, err := tree.OptionalFile(file)
	if err != nil || data == nil {
		return nil
	}
	var m map[string]any
	if sigyaml.Unmarshal(data, &m) != nil {
		return map[string]any{"<unparseable>": string(data)}
	}
	return m
}
