package promote

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/chartfixture"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
)

// acceptWithChart is accept for web's production overlay rendering the chart
// web version from repoURL, pinned to chartDigest: the record carries the
// chart.
func (f *fixture) acceptWithChart(src render.ChartSource, tag, digest, repoURL, version, chartDigest string) {
	t := f.t
	ctx := context.Background()
	f.write(map[string]string{
		webOverlay + "/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
			"namespace: web-production\nresources:\n  - ../../base\nimages:\n  - name: " + webImage + "\n    newTag: \"" + tag + "@" + digest + "\"\n" +
			chartEntry(repoURL, version, "3"),
		webOverlay + "/" + chartsource.LockFile: lockFor(repoURL, version, chartDigest),
	})
	app, err := render.Open(ctx, render.Options{Root: f.root, Path: filepath.Join(f.root, webOverlay), Charts: src})
	must(t, err)
	objs, err := app.Build(ctx)
	must(t, err)
	hash, err := render.Hash(slices.DeleteFunc(objs, acceptance.IsAcceptance))
	must(t, err)
	cs, err := acceptance.Charts(ctx, app)
	must(t, err)
	t0 := time.Now().Add(-time.Hour)
	rec, err := promotion.NewCandidate("web", 1, promotion.Artifact{Image: webImage + ":" + tag + "@" + digest, Digest: digest,
		SourceCommit: strings.Repeat("1", 40), Charts: gate.RecordCharts(cs)},
		promotion.Target{Environment: "production", Path: webOverlay, Cluster: "production", RenderedHash: hash, BaseRenderedHash: hash, Renderer: renderer}, t0, "test")
	must(t, err)
	f.acceptWeb(rec, tag+" with chart "+version)
}

// TestRollbackChart: web accepted A with chart 1.0.0, then B with chart
// 1.1.0. A rollback to A writes chart 1.0.0 pinned to the digest accepted
// then; once 1.0.0 was re-pushed with another package, the rollback is
// refused naming both digests and makes no branch.
func TestRollbackChart(t *testing.T) {
	ctx := context.Background()
	host := chartfixture.StartRegistry(t)
	repoURL := "oci://" + host + "/charts"
	d100 := chartfixture.Push(t, host, "charts", chartfixture.SchemaTgz(t, "web", "1.0.0", "first"))
	d110 := chartfixture.Push(t, host, "charts", chartfixture.SchemaTgz(t, "web", "1.1.0", "second"))
	src := chartsource.ForRender{Fetcher: chartsource.NewFetcher(chartsource.Options{CacheDir: t.TempDir()})}
	f := &fixture{t: t, top: t.TempDir()}
	f.root = f.top
	f.write(map[string]string{
		"apps/web/base/kustomization.yaml": "resources:\n  - deployment.yaml\n",
		"apps/web/base/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n" +
			"  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n" +
			"      containers:\n        - name: web\n          image: " + webImage + ":1.0.0\n",
	})
	f.git("init", "-q", "-b", "main")
	f.acceptWithChart(src, "1.0.0", digestA, repoURL, "1.0.0", d100)
	f.acceptWithChart(src, "1.1.0", digestB, repoURL, "1.1.0", d110)
	var err error
	f.repo, err = gitops.Open(ctx, f.root)
	must(t, err)
	f.repo.Charts = src
	req := RollbackRequest{App: "web", Env: "production", To: ledger.Previous, Path: webOverlay, Renderer: renderer,
		Exists: func(context.Context, string) (bool, error) { return true, nil }}

	res, err := Rollback(ctx, f.repo, req)
	must(t, err)
	if cs := res.Proposal.Record.Artifact.Charts; len(cs) != 1 || cs[0].Version != "1.0.0" || cs[0].Digest != d100 {
		t.Fatalf("rollback record's charts %+v, want web 1.0.0 %s", cs, d100)
	}
	lock := f.git("show", res.Proposal.Branch+":"+webOverlay+"/"+chartsource.LockFile)
	if !strings.Contains(lock, `version: "1.0.0"`) || !strings.Contains(lock, d100) {
		t.Fatalf("the rollback's lock does not pin web 1.0.0 to %s:\n%s", d100, lock)
	}
	if rep := f.check(res.Proposal.Branch, time.Now()); strings.Join(rules(rep), " ") != gate.RuleNotApproved {
		t.Fatalf("check of the chart rollback: %v %q", rules(rep), rep.Refusals)
	}
	f.git("branch", "-D", res.Proposal.Branch)

	repushed := chartfixture.Push(t, host, "charts", chartfixture.SchemaTgz(t, "web", "1.0.0", "repushed"))
	_, err = Rollback(ctx, f.repo, req)
	if re := refusedBy(t, err, gate.RuleChartVersionMoved); re.Field != "artifact.charts" || re.Object != repoURL+"/web:1.0.0" {
		t.Fatalf("rollback to chart 1.0.0 re-pushed as %s: %v, want a refusal of %s/web:1.0.0 artifact.charts", repushed, err, repoURL)
	}
	// Both digests named: the golden file.
	errorLines(t, "testdata/rollback-chart-moved.golden", 1)("re-pushed", redacted(err, d100, "<accepted>", repushed, "<repushed>", host, "<registry>"))
	if b := f.git("branch", "--list", "throughline/*"); b != "" {
		t.Fatalf("a refused rollback made branches: %s", b)
	}
}
