package promote

import (
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/gate"
)

// chartValuesDeployment is a chart app's template whose image comes from
// its values: repository and digest.
const chartValuesDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: checkout
  namespace: {{ .Release.Namespace }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app.kubernetes.io/component: api}
  template:
    metadata:
      labels: {app.kubernetes.io/component: api}
    spec:
      securityContext: {runAsNonRoot: true}
      containers:
        - name: api
          image: "{{ .Values.image.repository }}@{{ .Values.image.digest }}"
          resources:
            requests: {cpu: 100m, memory: 128Mi}
            limits: {memory: 256Mi}
`

const chartValuesFile = production + "/values-production.yaml"

func chartValuesYAML(digest string) string {
	return "# production's values\nimage:\n  repository: ghcr.io/throughline-dev/checkout\n  # the artifact: promotion changes only this\n" +
		"  digest: \"" + digest + "\"\nreplicas: 3\n"
}

// newChartValuesFixture is the chart app fixture whose image digest (the
// old one) is set in production's own value file.
func newChartValuesFixture(t *testing.T) *chartFixture {
	t.Helper()
	c := newChartAppFixture(t)
	c.write(map[string]string{
		production + "/templates/checkout.yaml": chartValuesDeployment,
		chartValuesFile:                         chartValuesYAML(oldDigest),
		production + "/throughline-helm.yaml": "apiVersion: throughline.dev/v1alpha1\nkind: HelmParameters\nreleaseName: checkout\n" +
			"namespace: checkout-production\nvalueFiles: [values-production.yaml]\n",
	})
	c.commit("production's image digest lives in its values")
	return c
}

// TestChartAppValuesDigest: propose writes the promoted digest where the
// chart app's own values hold the digest it runs (in place, comments
// kept), and the PR gate accepts exactly that change of the value file.
// Before, a chart app whose values set its image could not be promoted:
// propose wrote no digest and refused.
func TestChartAppValuesDigest(t *testing.T) {
	c := newChartValuesFixture(t)
	p := c.propose()
	c.git("checkout", "-q", p.Branch)
	values := c.read(chartValuesFile)
	c.git("checkout", "-q", "main")
	if values != chartValuesYAML(newDigest) {
		t.Fatalf("production's values after propose:\n%s\nwant:\n%s", values, chartValuesYAML(newDigest))
	}
	rep := c.check(p.Branch, time.Now())
	if got := strings.Join(rules(rep), " "); got != gate.RuleEvidence+" "+gate.RuleNotApproved {
		t.Fatalf("check of the chart app promotion (a candidate): %v\n%s", got, strings.Join(rep.Refusals, "\n"))
	}
}

// TestChartAppValuesRefusals: what the gate refuses in a chart app's value
// file besides the promoted digest.
func TestChartAppValuesRefusals(t *testing.T) {
	other := "sha256:" + strings.Repeat("e", 64)
	for _, tc := range []struct{ name, from, to, want string }{
		{"replicas changed in the same PR", "replicas: 3", "replicas: 30", "text other than a digest changed"},
		{"another digest than the record's", newDigest, other, "not the promoted"},
		{"a digest added", "replicas: 3", "replicas: 3\nsidecar: \"" + other + "\"", "a digest was added or removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChartValuesFixture(t)
			p := c.propose()
			c.amend(p.Branch, func() {
				c.write(map[string]string{chartValuesFile: strings.Replace(c.read(chartValuesFile), tc.from, tc.to, 1)})
			})
			rep := c.check(p.Branch, time.Now())
			found := false
			for _, f := range rep.Findings {
				found = found || f.Rule == gate.RuleParameter && f.File == chartValuesFile && strings.Contains(f.Reason, tc.want)
			}
			if !found {
				t.Fatalf("no %s finding on %s naming %q: %q", gate.RuleParameter, chartValuesFile, tc.want, rep.Refusals)
			}
		})
	}
}
