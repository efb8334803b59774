package promote

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/acceptance"
	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/gitops"
	"github.com/throughline-dev/throughline/internal/chartfixture"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/promotion"
	"github.com/throughline-dev/throughline/render"
	"github.com/throughline-dev/throughline/render/helmrender"
)

// The chart tests render charts in-process with Helm's SDK, as the
// throughline binary does.
func init() { render.UseHelm(helmrender.Engine{}) }

const stagingOverlay = "apps/checkout/overlays/staging"

// chartFixture is the example environment where checkout's overlays also
// render the chart web from an OCI registry on 127.0.0.1 (pushed with Helm's
// SDK), pinned by digest: staging accepted web 1.1.0 with the new image,
// production runs web 1.0.0.
type chartFixture struct {
	*fixture
	repoURL      string // oci://host/charts
	d100, d110   string // the pinned manifest digests
	source       chartsource.ForRender
	stagingChart promotion.Chart
	// unrecorded: staging's record carries no artifact.charts (a record
	// written before charts were recorded).
	unrecorded bool
}

// chartEntry is the helmCharts entry of an overlay; lockFor its lock file.
func chartEntry(repo, version, size string) string {
	return "helmCharts:\n  - name: web\n    repo: " + repo + "\n    version: " + version + "\n    releaseName: web\n    valuesInline:\n      size: " +
		size + "\n"
}

func lockFor(repo, version, digest string) string {
	return "apiVersion: throughline.dev/v1alpha1\nkind: ChartLock\ncharts:\n  - repo: " + repo + "\n    name: web\n    version: \"" + version +
		"\"\n    digest: " + digest + "\n"
}

func newChartFixture(t *testing.T, unrecorded ...bool) *chartFixture {
	t.Helper()
	host := chartfixture.StartRegistry(t)
	c := &chartFixture{fixture: &fixture{t: t, top: t.TempDir()}, repoURL: "oci://" + host + "/charts", unrecorded: len(unrecorded) > 0 && unrecorded[0]}
	c.d100 = chartfixture.Push(t, host, "charts", chartfixture.SchemaTgz(t, "web", "1.0.0", "first"))
	c.d110 = chartfixture.Push(t, host, "charts", chartfixture.SchemaTgz(t, "web", "1.1.0", "second"))
	c.source = chartsource.ForRender{Fetcher: chartsource.NewFetcher(chartsource.Options{CacheDir: t.TempDir()})}
	f := c.fixture
	f.root = filepath.Join(f.top, "gitops")
	copyDir(t, exampleRepo, f.root)
	testenv.RemoveTrust(t, f.root) // made-up digests, no evidence: the trust gates are trust_test.go's
	ks, kp := stagingOverlay+"/kustomization.yaml", production+"/kustomization.yaml"
	f.write(map[string]string{
		ks: strings.Replace(f.read(ks), "1.4.2@"+oldDigest, "1.5.0@"+newDigest, 1) + chartEntry(c.repoURL, "1.1.0", "2"),
		stagingOverlay + "/" + chartsource.LockFile: lockFor(c.repoURL, "1.1.0", c.d110),
		kp:                                      f.read(kp) + chartEntry(c.repoURL, "1.0.0", "6"),
		production + "/" + chartsource.LockFile: lockFor(c.repoURL, "1.0.0", c.d100),
	})
	f.useNotifier()
	f.git("init", "-q", "-b", "main")
	desired := f.commit("staging desires 1.5.0 and chart web 1.1.0")
	c.stagingReconciling(desired)
	f.commit("staging RECONCILING")
	var err error
	f.repo, err = gitops.Open(context.Background(), f.root)
	must(t, err)
	f.repo.Charts = c.source
	f.acceptStaging(desired, time.Now())
	return c
}

// stagingReconciling is fixture.stagingReconciling for the chart setup:
// staging's record carries the charts its render uses (web 1.1.0).
func (c *chartFixture) stagingReconciling(desired string) {
	t := c.t
	ctx := context.Background()
	app, err := render.Open(ctx, render.Options{Root: c.root, Path: filepath.Join(c.root, stagingOverlay), Charts: c.source})
	must(t, err)
	objs, err := app.Build(ctx)
	must(t, err)
	hash, err := render.Hash(slices.DeleteFunc(objs, acceptance.IsAcceptance))
	must(t, err)
	cs, err := acceptance.Charts(ctx, app)
	must(t, err)
	charts := gate.RecordCharts(cs)
	if len(charts) != 1 {
		t.Fatalf("staging renders charts %+v, want web", charts)
	}
	c.stagingChart = charts[0]
	if c.unrecorded {
		charts = nil
	}
	t0 := time.Now().Add(-time.Hour)
	rec, err := promotion.NewCandidate("checkout", 1,
		promotion.Artifact{Image: "ghcr.io/throughline-dev/checkout:1.5.0@" + newDigest, Digest: newDigest, SourceCommit: strings.Repeat("1", 40),
			Charts: charts},
		promotion.Target{Environment: "staging", Path: stagingOverlay, Cluster: "staging-eu-1", RenderedHash: hash, BaseRenderedHash: hash, Renderer: renderer},
		t0, "test")
	must(t, err)
	for _, err := range []error{
		rec.Verify(promotion.VerifiedIn{Environment: "dev", DesiredRevision: strings.Repeat("2", 40), ObservedRevision: strings.Repeat("2", 40),
			RenderedHash: "sha256:" + strings.Repeat("3", 64), RuntimeEvidence: "evidence/dev/checkout/1.json"}, t0, "test"),
		rec.Approve("alice", rec.InputFor(renderer), t0.Add(48*time.Hour), t0),
		rec.Reconcile(desired, t0, "test"),
	} {
		must(t, err)
	}
	data, err := rec.Marshal()
	must(t, err)
	c.write(map[string]string{promotion.RecordPath("checkout", "staging"): string(data)})
}

// TestChartContract: the Acceptance names the chart staging renders (name,
// version, manifest digest, source, values schema digest, $id, version);
// propose promotes the image AND the chart version + digest staging
// verified, written as pin --charts writes them, and nothing else of
// production's values; the gate classifies the chart change as artifact.
func TestChartContract(t *testing.T) {
	c := newChartFixture(t)
	sc := c.stagingChart
	if sc.Name != "web" || sc.Version != "1.1.0" || sc.Digest != c.d110 || sc.Source != c.repoURL || sc.ValuesSchema == nil ||
		sc.ValuesSchema.Digest != chartfixture.Digest([]byte(chartfixture.ValuesSchema)) ||
		sc.ValuesSchema.ID != "https://charts.example.invalid/web/values.schema.json" || sc.ValuesSchema.Version != "2" {
		t.Fatalf("staging's chart %+v (schema %+v), want web 1.1.0 %s from %s with its values schema", sc, sc.ValuesSchema, c.d110, c.repoURL)
	}
	p := c.propose()
	if len(p.Record.Artifact.Charts) != 1 || !p.Record.Artifact.Charts[0].Equal(sc) {
		t.Fatalf("proposed record's charts %+v, want staging's %+v", p.Record.Artifact.Charts, sc)
	}
	c.git("checkout", "-q", p.Branch)
	k, lock := c.read(production+"/kustomization.yaml"), c.read(production+"/"+chartsource.LockFile)
	c.git("checkout", "-q", "main")
	if !strings.Contains(k, "version: 1.1.0") || !strings.Contains(k, "size: 6") || strings.Contains(k, "size: 2") {
		t.Fatalf("production's kustomization after propose (chart version 1.1.0, production's own values):\n%s", k)
	}
	if !strings.Contains(lock, `version: "1.1.0"`) || !strings.Contains(lock, c.d110) || strings.Contains(lock, c.d100) {
		t.Fatalf("production's lock after propose (1.1.0 pinned to %s):\n%s", c.d110, lock)
	}
	rep := c.check(p.Branch, time.Now())
	if got := strings.Join(rules(rep), " "); got != gate.RuleEvidence+" "+gate.RuleNotApproved {
		t.Fatalf("check of the chart promotion (a candidate): %v\n%s", got, strings.Join(rep.Refusals, "\n"))
	}
	var chartChanges []string
	for _, ch := range rep.Changes {
		if ch.Object.Kind == "Chart" {
			if ch.Class != promotion.ClassArtifact {
				t.Errorf("chart change %s classified %s, want artifact", ch, ch.Class)
			}
			chartChanges = append(chartChanges, ch.Field+": "+ch.Before+" -> "+ch.After)
		}
	}
	want := []string{"digest: " + c.d100 + " -> " + c.d110, "version: 1.0.0 -> 1.1.0"}
	if !slices.Equal(chartChanges, want) {
		t.Fatalf("chart changes %q, want %q", chartChanges, want)
	}
}

// TestChartCheckRefusals: the attacks on the chart contract, each a change
// to the proposed branch, each refused naming its rule (plus evidence and
// not-approved: every case is a CANDIDATE).
func TestChartCheckRefusals(t *testing.T) {
	kfile := production + "/kustomization.yaml"
	lockFile := production + "/" + chartsource.LockFile
	recFile := promotion.RecordPath("checkout", "production")
	for _, tc := range []struct {
		name   string
		change func(c *chartFixture)
		rules  []string
		want   []string
		file   string // the file a finding of the first rule names
		field  string // and its field
		verify bool   // verify the candidate first (its source environment is then named)
	}{
		{"chart bumped but not the one the record carries", func(c *chartFixture) {
			// production back on web 1.0.0: the record says 1.1.0.
			c.write(map[string]string{kfile: strings.Replace(c.read(kfile), "version: 1.1.0", "version: 1.0.0", 1),
				lockFile: lockFor(c.repoURL, "1.0.0", c.d100)})
		}, []string{gate.RuleChartUnrecorded, gate.RuleRenderedHash}, []string{"renders web 1.0.0 (" + "sha256:", "does not render web 1.1.0"}, recFile, "artifact.charts", false},
		{"record whose chart digest differs from staging's", func(c *chartFixture) {
			// Record and render agree on web 1.0.0, which staging never verified.
			c.write(map[string]string{kfile: strings.Replace(c.read(kfile), "version: 1.1.0", "version: 1.0.0", 1),
				lockFile: lockFor(c.repoURL, "1.0.0", c.d100),
				recFile:  strings.Replace(strings.Replace(c.read(recFile), c.d110, c.d100, 1), "version: 1.1.0", "version: 1.0.0", 1)})
		}, []string{gate.RuleChartUnverified, gate.RuleRenderedHash}, []string{"not what staging verified", "renders web 1.0.0"}, recFile, "artifact.charts", true},
		{"values change smuggled in the promotion", func(c *chartFixture) {
			c.write(map[string]string{kfile: strings.Replace(c.read(kfile), "size: 6", "size: 9", 1)})
		}, []string{gate.RuleParameter, gate.RuleRenderedHash}, []string{"helmCharts changed"}, kfile, "helmCharts", false},
		{"values the chart's schema rejects", func(c *chartFixture) {
			c.write(map[string]string{kfile: strings.Replace(c.read(kfile), "size: 6", "size: 60", 1)})
		}, []string{gate.RuleChartValuesSchema, gate.RuleParameter}, []string{"values.schema.json rejects helmCharts[0].valuesInline.size"}, kfile,
			"helmCharts[0].valuesInline.size", false},
		{"lock file of another directory", func(c *chartFixture) {
			c.write(map[string]string{stagingOverlay + "/" + chartsource.LockFile: lockFor(c.repoURL, "1.1.0", c.d110) + "# touched\n"})
		}, []string{gate.RuleFile}, []string{"staging/" + chartsource.LockFile + " changed"}, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChartFixture(t)
			p := c.propose()
			want := append([]string{gate.RuleEvidence, gate.RuleNotApproved}, tc.rules...)
			if tc.verify {
				_, err := Verify(context.Background(), c.repo, VerifyRequest{App: "checkout", To: "production", Now: time.Now()})
				must(t, err)
				want = append([]string{gate.RuleNotApproved}, tc.rules...)
			}
			c.amend(p.Branch, func() { tc.change(c) })
			rep := c.check(p.Branch, time.Now())
			if tc.rules[0] == gate.RuleChartValuesSchema { // the gate stops before evidence and approval: the chart does not render
				want = tc.rules
			}
			slices.Sort(want)
			if got := rules(rep); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("rules %v, want %v\n%s", got, want, strings.Join(rep.Refusals, "\n"))
			}
			all := strings.Join(rep.Refusals, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("refusals do not say %q:\n%s", w, all)
				}
			}
			if tc.file == "" {
				return
			}
			i := slices.IndexFunc(rep.Findings, func(f gate.Finding) bool { return f.Rule == tc.rules[0] })
			if f := rep.Findings[i]; !strings.HasSuffix(f.File, tc.file) || f.Field != tc.field {
				t.Errorf("finding %+v, want file %s field %s", f, tc.file, tc.field)
			}
		})
	}
}

// TestChartWithoutRecord: a change that bumps production's chart and
// carries no promotion record is judged by the repository check, which
// refuses it (production is protected).
func TestChartWithoutRecord(t *testing.T) {
	c := newChartFixture(t)
	kfile := production + "/kustomization.yaml"
	c.git("checkout", "-q", "-b", "bump")
	c.write(map[string]string{kfile: strings.Replace(c.read(kfile), "version: 1.0.0", "version: 1.1.0", 1),
		production + "/" + chartsource.LockFile: lockFor(c.repoURL, "1.1.0", c.d110)})
	c.commit("bump web without a record")
	c.git("checkout", "-q", "main")
	rep := c.check("bump", time.Now())
	if rep.OK || rep.Repository == nil {
		t.Fatalf("a chart bump without a record passed: %+v", rep)
	}
}

// TestProposeRefusesMovedChart: production's lock already pins web 1.1.0
// to another digest than staging verified: propose refuses it naming both
// digests (chart-version-moved) and writes nothing.
func TestProposeRefusesMovedChart(t *testing.T) {
	c := newChartFixture(t)
	other := "sha256:" + strings.Repeat("e", 64)
	c.write(map[string]string{production + "/" + chartsource.LockFile: lockFor(c.repoURL, "1.0.0", c.d100) +
		"  - repo: " + c.repoURL + "\n    name: web\n    version: \"1.1.0\"\n    digest: " + other + "\n"})
	c.commit("production pins 1.1.0 elsewhere")
	_, err := Propose(context.Background(), c.repo, ProposeRequest{App: "checkout", From: "staging", To: "production", Path: production, Renderer: renderer})
	lock := production + "/" + chartsource.LockFile
	if re := refusedBy(t, err, gate.RuleChartVersionMoved); re.Object != c.repoURL+"/web:1.1.0" || re.File != lock || re.Field != "charts[1].digest" {
		t.Fatalf("propose over a lock pinning 1.1.0 to %s: %v, want a refusal of %s/web:1.1.0 in %s charts[1].digest", other, err, c.repoURL, lock)
	}
	// Both digests named: the golden file.
	errorLines(t, "testdata/propose-chart-moved.golden", 1)("lock pins 1.1.0 elsewhere",
		redacted(err, other, "<production's lock>", c.d110, "<staging's>", c.repoURL, "<repo>"))
}

// TestRollbackChartStillServed: a rollback's chart must still be served
// with the digest accepted: a version re-pushed with another package (OCI
// and HTTP chart repository) is refused naming both digests, a version
// the source no longer serves is refused as gone.
func TestRollbackChartStillServed(t *testing.T) {
	ctx := context.Background()
	host := chartfixture.StartRegistry(t)
	oci := "oci://" + host + "/charts"
	first := chartfixture.Push(t, host, "charts", chartfixture.SchemaTgz(t, "web", "1.0.0", "first"))
	src := chartsource.ForRender{Fetcher: chartsource.NewFetcher(chartsource.Options{CacheDir: t.TempDir()})}
	accepted := []promotion.Chart{{Name: "web", Version: "1.0.0", Digest: first, Source: oci}}
	if err := gate.ChartsServed(ctx, src, accepted); err != nil {
		t.Fatalf("the accepted package, still served: %v", err)
	}
	// Both digests named: the golden file.
	record := errorLines(t, "testdata/chart-still-served.golden", 2)
	repushed := chartfixture.Push(t, host, "charts", chartfixture.SchemaTgz(t, "web", "1.0.0", "repushed"))
	err := gate.ChartsServed(ctx, src, accepted)
	if re := refusedBy(t, err, gate.RuleChartVersionMoved); re.Object != oci+"/web:1.0.0" || re.Field != "artifact.charts" {
		t.Fatalf("OCI version re-pushed (%s -> %s): %v", first, repushed, err)
	}
	record("OCI version re-pushed", redacted(err, first, "<accepted>", repushed, "<repushed>", oci, "<repo>"))
	var re *exitcode.Refusal
	if err := gate.ChartsServed(ctx, src, []promotion.Chart{{Name: "web", Version: "9.9.9", Digest: first, Source: oci}}); !errors.As(err, &re) ||
		re.Rule != gate.RuleChartGone {
		t.Fatalf("a version the registry does not serve: %v", err)
	}

	repo := chartfixture.StartRepo(t)
	v1 := chartfixture.SchemaTgz(t, "web", "2.0.0", "http-first")
	repo.Publish(t, [][]byte{v1}, "", "")
	httpAccepted := []promotion.Chart{{Name: "web", Version: "2.0.0", Digest: chartfixture.Digest(v1), Source: repo.URL()}}
	if err := gate.ChartsServed(ctx, src, httpAccepted); err != nil {
		t.Fatalf("the accepted HTTP package, still served: %v", err)
	}
	v2 := chartfixture.SchemaTgz(t, "web", "2.0.0", "http-repushed")
	repo.Publish(t, [][]byte{v2}, "", "")
	err = gate.ChartsServed(ctx, src, httpAccepted)
	if re := refusedBy(t, err, gate.RuleChartVersionMoved); re.Object != repo.URL()+"/web:2.0.0" || re.Field != "artifact.charts" {
		t.Fatalf("HTTP version re-published with another package: %v", err)
	}
	record("HTTP version re-published", redacted(err, chartfixture.Digest(v1), "<accepted>", chartfixture.Digest(v2), "<repushed>", repo.URL(), "<repo>"))
	// A chart of the repository needs no source.
	if err := gate.ChartsServed(ctx, nil, []promotion.Chart{{Name: "web", Version: "1.0.0", Digest: first, Source: "apps/web/chart"}}); err != nil {
		t.Fatalf("a chart of the repository: %v", err)
	}
}

// TestChartSourceRecordWithoutCharts: staging's record was written before
// charts were recorded. Propose takes staging's charts from its render at
// the base, when that render is the one staging accepted; once staging's
// overlay renders something else, what staging verified is unknown and
// propose refuses (chart-unverified).
func TestChartSourceRecordWithoutCharts(t *testing.T) {
	c := newChartFixture(t, true)
	p := c.propose()
	if len(p.Record.Artifact.Charts) != 1 || !p.Record.Artifact.Charts[0].Equal(c.stagingChart) {
		t.Fatalf("proposed charts %+v, want staging's %+v", p.Record.Artifact.Charts, c.stagingChart)
	}
	c.git("branch", "-D", p.Branch)
	ks := stagingOverlay + "/kustomization.yaml"
	c.write(map[string]string{ks: strings.Replace(c.read(ks), "size: 2", "size: 3", 1)})
	c.commit("staging changed after its acceptance")
	_, err := Propose(context.Background(), c.repo, ProposeRequest{App: "checkout", From: "staging", To: "production", Path: production, Renderer: renderer})
	refusedBy(t, err, gate.RuleChartUnverified)
	errorLines(t, "testdata/chart-unverified.golden", 1)("staging renders other charts than it accepted", redacted(err, c.repoURL, "<repo>"))
}
