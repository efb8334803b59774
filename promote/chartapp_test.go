package promote

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/chartsource"
	"github.com/throughline-dev/throughline/exitcode"
	"github.com/throughline-dev/throughline/gate"
	"github.com/throughline-dev/throughline/internal/chartfixture"
)

// chartAppFile is production's Chart.yaml when production is a chart app
// (an Argo CD Helm-style directory) whose dependency web is pinned in the
// lock beside it.
const chartAppFile = production + "/Chart.yaml"

func chartAppYAML(repo, version string) string {
	return "# production's checkout: a chart app; its dependency is the team's chart.\napiVersion: v2\nname: checkout-production\n" +
		"version: 1.0.0\ndependencies:\n  - name: web # pinned in throughline-charts.lock.yaml\n    version: " + version +
		"\n    repository: " + repo + "\n"
}

// chartAppDeployment is the chart app's own template: checkout already
// running the promoted digest (a chart app's image digest is set in its
// values: chartvalues_test.go has one whose values set it).
const chartAppDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: checkout
  namespace: {{ .Release.Namespace }}
spec:
  replicas: 2
  selector:
    matchLabels: {app.kubernetes.io/component: api}
  template:
    metadata:
      labels: {app.kubernetes.io/component: api}
    spec:
      securityContext: {runAsNonRoot: true}
      containers:
        - name: api
          image: ghcr.io/throughline-dev/checkout@` + newDigest + `
          resources:
            requests: {cpu: 100m, memory: 128Mi}
            limits: {memory: 256Mi}
`

// newChartAppFixture is the chart fixture where production is a chart
// app on web 1.0.0 (staging verified web 1.1.0).
func newChartAppFixture(t *testing.T) *chartFixture {
	t.Helper()
	c := newChartFixture(t)
	for _, f := range []string{"kustomization.yaml", "environment.yaml"} {
		must(t, os.Remove(c.root+"/"+production+"/"+f))
	}
	c.write(map[string]string{
		chartAppFile:                            chartAppYAML(c.repoURL, "1.0.0"),
		production + "/values.yaml":             "web:\n  size: 6\n",
		production + "/throughline-helm.yaml":   "apiVersion: throughline.dev/v1alpha1\nkind: HelmParameters\nreleaseName: checkout\nnamespace: checkout-production\n",
		production + "/templates/checkout.yaml": chartAppDeployment,
	})
	c.commit("production is a chart app on web 1.0.0")
	return c
}

// TestChartAppPromotion: propose promotes the chart staging verified into
// a chart app: the dependency's version in the target's Chart.yaml (in
// place, comments kept) and its digest in the lock beside it; the gate
// accepts exactly that edit as the chart change (artifact).
func TestChartAppPromotion(t *testing.T) {
	c := newChartAppFixture(t)
	p := c.propose()
	if len(p.Record.Artifact.Charts) != 1 || !p.Record.Artifact.Charts[0].Equal(c.stagingChart) {
		t.Fatalf("proposed record's charts %+v, want staging's %+v", p.Record.Artifact.Charts, c.stagingChart)
	}
	c.git("checkout", "-q", p.Branch)
	chart, lock := c.read(chartAppFile), c.read(production+"/"+chartsource.LockFile)
	c.git("checkout", "-q", "main")
	if want := chartAppYAML(c.repoURL, "1.1.0"); chart != want {
		t.Fatalf("production's Chart.yaml after propose:\n%s\nwant:\n%s", chart, want)
	}
	if !strings.Contains(lock, `version: "1.1.0"`) || !strings.Contains(lock, c.d110) || strings.Contains(lock, c.d100) {
		t.Fatalf("production's lock after propose (1.1.0 pinned to %s):\n%s", c.d110, lock)
	}
	rep := c.check(p.Branch, time.Now())
	if got := strings.Join(rules(rep), " "); got != gate.RuleEvidence+" "+gate.RuleNotApproved {
		t.Fatalf("check of the chart app promotion (a candidate): %v\n%s", got, strings.Join(rep.Refusals, "\n"))
	}
	var chartChanges []string
	for _, ch := range rep.Changes {
		if ch.Object.Kind == "Chart" {
			chartChanges = append(chartChanges, string(ch.Class)+" "+ch.Field+": "+ch.Before+" -> "+ch.After)
		}
	}
	want := []string{"artifact digest: " + c.d100 + " -> " + c.d110, "artifact version: 1.0.0 -> 1.1.0"}
	if !slices.Equal(chartChanges, want) {
		t.Fatalf("chart changes %q, want %q", chartChanges, want)
	}
}

// TestChartAppCheckRefusals: the attacks on a chart app's promotion, each
// an edit of the proposed branch's Chart.yaml beyond the dependency's
// exact version, refused naming the file and field.
func TestChartAppCheckRefusals(t *testing.T) {
	lockFile := production + "/" + chartsource.LockFile
	record := errorLines(t, "testdata/chart-app-render-refusals.golden", 2)
	for _, tc := range []struct {
		name   string
		change func(c *chartFixture)
		field  string
		// renderRefuses: the head does not render (a range, an unpinned
		// chart): Check fails with exit 3 or 4 naming the field.
		renderRefuses bool
	}{
		{"another field of Chart.yaml in the same PR", func(c *chartFixture) {
			c.write(map[string]string{chartAppFile: strings.Replace(c.read(chartAppFile), "version: 1.0.0\n", "version: 1.0.1\n", 1)})
		}, "version", false},
		{"the dependency's repository changed", func(c *chartFixture) {
			host := strings.TrimPrefix(strings.TrimSuffix(c.repoURL, "/charts"), "oci://")
			d := chartfixture.Push(c.t, host, "mirror", chartfixture.SchemaTgz(c.t, "web", "1.1.0", "second"))
			mirror := "oci://" + host + "/mirror"
			c.write(map[string]string{chartAppFile: strings.Replace(c.read(chartAppFile), c.repoURL, mirror, 1),
				lockFile: lockFor(mirror, "1.1.0", d)})
		}, "dependencies[0].repository", false},
		{"a version range", func(c *chartFixture) {
			c.write(map[string]string{chartAppFile: strings.Replace(c.read(chartAppFile), "version: 1.1.0", `version: "^1.1.0"`, 1)})
		}, "dependencies[0].version", true},
		{"another dependency added", func(c *chartFixture) {
			c.write(map[string]string{chartAppFile: c.read(chartAppFile) + "  - name: extra\n    version: 1.0.0\n    repository: " + c.repoURL + "\n"})
		}, "dependencies[1].repository", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChartAppFixture(t)
			p := c.propose()
			c.amend(p.Branch, func() { tc.change(c) })
			rep, err := gate.CheckPromotion(context.Background(), c.repo, gate.Request{Base: "main", Head: p.Branch, Now: time.Now(), Renderer: renderer})
			if tc.renderRefuses {
				// The render itself refuses the head: the gate fails naming the file and field.
				// The file and field lead the message (the golden file): a
				// range is the render's refusal of the field, another
				// dependency the lock's refusal wrapped with it.
				var re *exitcode.Refusal
				if code := exitcode.Code(err); !errors.As(err, &re) || code != exitcode.Refused {
					t.Fatalf("check: %v (exit %d), want a refusal naming %s: %s", err, code, chartAppFile, tc.field)
				}
				record(tc.name, redacted(err, c.repoURL, "<repo>"))
				return
			}
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			i := slices.IndexFunc(rep.Findings, func(f gate.Finding) bool { return f.Rule == gate.RuleParameter })
			if i < 0 || rep.OK {
				t.Fatalf("rules %v, want %s on %s\n%s", rules(rep), gate.RuleParameter, tc.field, strings.Join(rep.Refusals, "\n"))
			}
			if f := rep.Findings[i]; f.File != chartAppFile || f.Field != tc.field {
				t.Errorf("finding %+v, want file %s field %s", f, chartAppFile, tc.field)
			}
		})
	}
}
