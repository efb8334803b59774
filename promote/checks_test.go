package promote

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/checkfile"
	"github.com/throughline-dev/throughline/exitcode"
)

const productionChecks = `apiVersion: throughline.dev/v1alpha1
kind: RuntimeChecks
soak: 30m
checks:
  - name: error-ratio
    prometheus:
      query: sum(rate(http_requests_total{job="checkout"}[5m]))
      op: "<"
      threshold: 0.01
`

// TestCheckRefusesChecksChange: the runtime checks are the bar a release
// is judged by, not part of the release. A promotion PR that also loosens
// (or adds) the target's checks is refused (rule file, naming the checks
// file): the checks change in a change of their own, reviewed as any
// change of the overlay. A query Prometheus cannot parse in the target's
// checks refuses the PR gate's render with the parser's position.
func TestCheckRefusesChecksChange(t *testing.T) {
	file := production + "/" + checkfile.File
	t.Run("checks loosened in a promotion", func(t *testing.T) {
		f := newFixture(t)
		p := f.propose()
		f.amend(p.Branch, func() { f.write(map[string]string{file: strings.Replace(productionChecks, "0.01", "0.9", 1)}) })
		rep := f.check(p.Branch, time.Now())
		if rep.OK || !strings.Contains(strings.Join(rep.Refusals, "\n"), file+" changed") {
			t.Fatalf("rules %v:\n%s", rules(rep), strings.Join(rep.Refusals, "\n"))
		}
	})
	t.Run("a query only Prometheus's parser refuses", func(t *testing.T) {
		f := newFixture(t)
		f.write(map[string]string{file: strings.Replace(productionChecks, "sum(rate(http_requests_total{job=\"checkout\"}[5m]))", "rate(x)", 1)})
		f.commit("production checks")
		_, err := Propose(context.Background(), f.repo, ProposeRequest{App: "checkout", From: "staging", To: "production", Path: production, Renderer: renderer})
		if exitcode.Code(err) != exitcode.Invalid || !strings.Contains(err.Error(), file+": checks[0].prometheus.query: PromQL 1:") {
			t.Fatalf("propose: %v", err)
		}
	})
}
