package gate

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/gitrepo"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
)

// Rules of the chart contract (docs/helm.md, "Promoting a chart").
const (
	// RuleChartUnverified: the charts are not the ones the source
	// environment verified (propose: the target would render others; check:
	// the record's artifact.charts differ from the source's record).
	RuleChartUnverified = "chart-unverified"
	// RuleChartUnrecorded: the change renders a chart (version, digest)
	// that the record's artifact.charts does not carry.
	RuleChartUnrecorded = "chart-unrecorded"
	// RuleChartNotPromotable: the chart's version is set in a file the
	// promotion may not change (a base shared with other environments).
	RuleChartNotPromotable = "chart-not-promotable"
	// RuleChartGone: a rollback's chart version is no longer served.
	RuleChartGone = "chart-gone"
	// RuleChartVersionMoved: a rollback's chart version is served with
	// another digest than the one accepted (re-pushed).
	RuleChartVersionMoved = chartsource.RuleChartVersionMoved
)

// RecordCharts is artifact.charts of a promotion record for the charts an
// Acceptance declares.
func RecordCharts(cs []v1alpha1.Chart) []promotion.Chart {
	var out []promotion.Chart
	for _, c := range cs {
		pc := promotion.Chart{Name: c.Name, Version: c.Version, Digest: c.Digest, Source: c.Source}
		if c.ValuesSchema != nil {
			pc.ValuesSchema = &promotion.ValuesSchema{Digest: c.ValuesSchema.Digest, ID: c.ValuesSchema.ID, Version: c.ValuesSchema.Version}
		}
		out = append(out, pc)
	}
	return out
}

// RemoteChart reports whether c comes from a chart repository (else it is
// a chart of the repository, Source its directory).
func RemoteChart(c promotion.Chart) bool { return chartsource.IsRemote(c.Source) }

// chartKey is a chart's identity in a comparison: name, version, digest
// (a chart of the repository may sit in another directory per
// environment; its digest is its content).
func chartKey(c promotion.Chart) string {
	k := c.Name + " " + c.Version + "@" + c.Digest
	if c.ValuesSchema != nil {
		k += " values schema " + c.ValuesSchema.Digest
	}
	return k
}

// chartDiff lists, one line each, the charts of got that want lacks and
// those of want that got lacks.
func chartDiff(want, got []promotion.Chart) []string {
	var out []string
	has := func(cs []promotion.Chart, c promotion.Chart) bool {
		return slices.ContainsFunc(cs, func(x promotion.Chart) bool { return chartKey(x) == chartKey(c) })
	}
	for _, c := range got {
		if !has(want, c) {
			out = append(out, fmt.Sprintf("renders %s %s (%s from %s), not recorded", c.Name, c.Version, c.Digest, c.Source))
		}
	}
	for _, c := range want {
		if !has(got, c) {
			out = append(out, fmt.Sprintf("does not render %s %s (%s from %s)", c.Name, c.Version, c.Digest, c.Source))
		}
	}
	return out
}

// chartsAt renders the app at p in tree (without policy) and lists the
// charts it uses and its rendered hash.
func chartsAt(ctx context.Context, r *gitops.Repo, tree *gitops.Tree, p string) ([]promotion.Chart, string, error) {
	opts := tree.RenderOptions(p)
	opts.Charts = r.Charts
	app, err := render.Open(ctx, opts)
	if err != nil {
		return nil, "", err
	}
	objs, err := app.Build(ctx)
	if err != nil {
		return nil, "", err
	}
	objs = slices.DeleteFunc(objs, acceptance.IsAcceptance)
	h, err := render.Hash(objs)
	if err != nil {
		return nil, "", exitcode.InvalidFile(p, err)
	}
	cs, err := acceptance.Charts(ctx, app)
	return RecordCharts(cs), h, err
}

// SourceCharts are the charts the source environment verified: its
// record's artifact.charts, else (a record written before charts were
// recorded) what its overlay renders at baseRev, when that render is the
// one it accepted.
func SourceCharts(ctx context.Context, r *gitops.Repo, baseRev string, src *promotion.Record) ([]promotion.Chart, error) {
	if len(src.Artifact.Charts) > 0 {
		return artifactCharts(src.Artifact.Charts, src.Target.Path), nil
	}
	tree, err := r.Tree(ctx, baseRev)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tree.Close() }() // a temporary export; the result does not depend on its removal
	charts, hash, err := chartsAt(ctx, r, tree, src.Target.Path)
	if err != nil {
		return nil, fmt.Errorf("listing the charts %s renders: %w", src.Target.Path, err)
	}
	if len(charts) > 0 && hash != src.Target.RenderedHash {
		return nil, exitcode.Refuse(RuleChartUnverified, "%s renders charts at %s with rendered hash %s, not the render %s accepted (%s): "+
			"what it verified is unknown", src.Target.Path, gitrepo.Short(baseRev), hash, src.Target.Environment, src.Target.RenderedHash)
	}
	return artifactCharts(charts, src.Target.Path), nil
}

// artifactCharts is cs without the chart of a chart app at appPath itself
// (a chart of the repository whose source is that directory): it is the
// environment's configuration, judged as its files are; its dependencies
// are the promoted charts.
func artifactCharts(cs []promotion.Chart, appPath string) []promotion.Chart {
	return slices.DeleteFunc(slices.Clone(cs), func(c promotion.Chart) bool {
		return !RemoteChart(c) && path.Clean(c.Source) == path.Clean(appPath)
	})
}

// ChartList names where a file of the target sets remote chart versions:
// the sequence key and the repository key of its entries.
type ChartList struct{ Seq, Repo string }

var (
	// HelmChartsList is a kustomization's helmCharts entries.
	HelmChartsList = ChartList{Seq: "helmCharts", Repo: "repo"}
	// DependenciesList is a chart app's Chart.yaml dependencies.
	DependenciesList = ChartList{Seq: "dependencies", Repo: "repository"}
)

// ChartListOf is where the target file file sets chart versions: the
// dependencies of a Chart.yaml, else a kustomization's helmCharts.
func ChartListOf(file string) ChartList {
	if path.Base(file) == "Chart.yaml" {
		return DependenciesList
	}
	return HelmChartsList
}

// TargetFile is the file of the target overlay p that a promotion edits:
// its kustomization, or the Chart.yaml of a chart app (a directory holding
// Chart.yaml and no kustomization), whose remote dependencies' versions
// propose writes. A chart app's image digest is set in its values, where
// propose writes it (chartvalues.go).
func TargetFile(ctx context.Context, tree *gitops.Tree, p string) (string, error) {
	kfile, err := tree.KustomizationFile(ctx, p)
	if err == nil {
		return kfile, nil
	}
	chart := path.Join(p, "Chart.yaml")
	if tree.IsFile(chart) {
		return chart, nil
	}
	return "", err
}

// VerifyTargetCharts refuses a target that, with the promotion written,
// does not render exactly the charts the source verified.
func VerifyTargetCharts(d *acceptance.Declaration, target string, want []promotion.Chart) error {
	got := artifactCharts(RecordCharts(d.Acceptance.Spec.Charts), target)
	if diff := chartDiff(want, got); len(diff) > 0 {
		return exitcode.Refuse(RuleChartUnverified, "after writing the promotion, %s does not render the charts the source environment verified: %s "+
			"(a chart set in a base shared with other environments cannot be promoted: rule %s)", d.App.RelDir(), strings.Join(diff, "; "),
			RuleChartNotPromotable)
	}
	return nil
}

// ChartResolver is a chart source that can ask a chart repository what a
// chart version is now (chartsource.ForRender).
type ChartResolver interface {
	ResolveChart(ctx context.Context, ref render.ChartRef) (string, error)
}

// ChartsServed refuses a rollback whose remote charts are no longer
// served as accepted: a version its source no longer serves (rule
// chart-gone), or serves with another digest (re-pushed: rule
// chart-version-moved, naming both digests).
func ChartsServed(ctx context.Context, charts render.ChartSource, cs []promotion.Chart) error {
	var remote []promotion.Chart
	for _, c := range cs {
		if RemoteChart(c) {
			remote = append(remote, c)
		}
	}
	if len(remote) == 0 {
		return nil
	}
	res, ok := charts.(ChartResolver)
	if !ok {
		return exitcode.Refuse(RuleChartGone, "rollback target renders remote charts and no chart source is configured to check them")
	}
	for _, c := range remote {
		ref := render.ChartRef{Repo: c.Source, Name: c.Name, Version: c.Version}
		d, err := res.ResolveChart(ctx, ref)
		switch code := exitcode.Code(err); {
		case err == nil && d != c.Digest:
			return &exitcode.Refusal{Rule: RuleChartVersionMoved, Object: c.Source + "/" + c.Name + ":" + c.Version, Field: "artifact.charts",
				Reason: fmt.Sprintf("REJECTED rollback: chart %s %s was accepted as %s and its source now serves %s: the package was re-pushed",
					c.Name, c.Version, c.Digest, d)}
		case err == nil:
		case code == exitcode.Refused || code == exitcode.Invalid:
			return exitcode.Refuse(RuleChartGone, "rollback target's chart %s %s (%s from %s) is no longer served: %v", c.Name, c.Version, c.Digest,
				c.Source, err)
		default:
			return fmt.Errorf("checking the rollback target's chart %s %s at %s: %w", c.Name, c.Version, c.Source, err)
		}
	}
	return nil
}
