package promote

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/ledger"
	"github.com/throughline-dev/throughline/runtimecheck/checkfile"
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
	t.Parallel()
	file := production + "/" + checkfile.File
	t.Run("checks loosened in a promotion", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		p := f.propose()
		f.amend(p.Branch, func() { f.write(map[string]string{file: strings.Replace(productionChecks, "0.01", "0.9", 1)}) })
		rep := f.check(p.Branch, time.Now())
		if rep.OK || !strings.Contains(strings.Join(rep.Refusals, "\n"), file+" changed") {
			t.Fatalf("rules %v:\n%s", rules(rep), strings.Join(rep.Refusals, "\n"))
		}
	})
	t.Run("a query only Prometheus's parser refuses", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.write(map[string]string{file: strings.Replace(productionChecks, "sum(rate(http_requests_total{job=\"checkout\"}[5m]))", "rate(x)", 1)})
		f.commit("production checks")
		_, err := Propose(context.Background(), f.repo, ProposeRequest{App: "checkout", From: "staging", To: "production", Path: production, Renderer: renderer})
		var fe *checkfile.FieldError
		if invalidFile(t, err, file); !errors.As(err, &fe) || fe.Field != "checks[0].prometheus.query" {
			t.Fatalf("propose: %v, want the field checks[0].prometheus.query", err)
		}
		errorLines(t, "testdata/checks-promql.golden", 1)("propose", err) // the field and the parser's position
	})
}

// passedChecks is the evidence of the runtime checks the overlay dir of
// the work tree declares, every one Passed at at, and the start of a soak
// that ended at at (nil, nil without checks).
func (f *fixture) passedChecks(dir string, at time.Time) ([]evidence.Check, *time.Time) {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(f.root, filepath.FromSlash(dir), checkfile.File))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	must(f.t, err)
	rc, err := checkfile.Parse(checkfile.File, data, checkfile.Options{AnyNamespace: true})
	must(f.t, err)
	checks := evidence.Checks(rc, nil)
	for i := range checks {
		checks[i].Verdict, checks[i].Value, checks[i].EvaluatedAt = string(v1alpha1.CheckPassed), "0.001", &at
	}
	started := at.Add(-rc.Soak.Duration - time.Minute)
	return checks, &started
}

// editEvidence rewrites staging's evidence (the notifier's acceptance
// commit) through its decoded form.
func (f *fixture) editEvidence(edit func(ev *evidence.Record)) {
	f.t.Helper()
	f.rewriteAcceptance(func(m map[string]string) {
		ev, err := evidence.Parse("x", []byte(m["evidence"]))
		must(f.t, err)
		edit(ev)
		data, err := ev.Marshal()
		must(f.t, err)
		m["evidence"] = string(data)
	})
}

// TestVerifyRequiresChecksPassed: staging's overlay declares runtime checks
// (examples/gitops-env); evidence that does not show every one Passed
// after the declared soak backs no promotion (exit 3, rule
// checks-not-passed, naming the check), for verify and propose alike.
func TestVerifyRequiresChecksPassed(t *testing.T) {
	t.Parallel()
	record := errorLines(t, "testdata/checks-not-passed.golden", 14)
	for _, tc := range []struct {
		name   string
		attack func(ev *evidence.Record)
		want   string // what the golden file says
	}{
		{"no checks in the evidence", func(ev *evidence.Record) { ev.Checks = nil }, "check error-ratio is not in the evidence"},
		{"a check missing", func(ev *evidence.Record) { ev.Checks = ev.Checks[:2] }, "check healthz is not in the evidence"},
		{"a check failed", func(ev *evidence.Record) {
			ev.Checks[0].Verdict, ev.Checks[0].Value = string(v1alpha1.CheckFailed), "0.07"
		}, `check error-ratio (prometheus "sum(rate(`},
		{"a check unverifiable", func(ev *evidence.Record) {
			ev.Checks[1].Verdict, ev.Checks[1].Message = string(v1alpha1.CheckUnverifiable), "Prometheus unreachable"
		}, "is Unverifiable"},
		{"a check still pending", func(ev *evidence.Record) { ev.Checks[2].Verdict = string(v1alpha1.CheckPending) }, "healthz (http"},
		{"no soak", func(ev *evidence.Record) { ev.SoakStartedAt = nil }, "no completed soak"},
		{"a soak cut short", func(ev *evidence.Record) {
			s := ev.VerifiedAt.Add(-2 * time.Minute)
			ev.SoakStartedAt = &s
		}, "declares a soak of 10m0s; the evidence's soak lasted 2m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t)
			p := f.propose()
			f.editEvidence(tc.attack)
			check := func(what string, err error) {
				t.Helper()
				refusedBy(t, err, ledger.RuleChecksNotPassed)
				record(tc.name+", "+what, err) // tc.want
			}
			_, err := Verify(ctx, f.repo, VerifyRequest{App: "checkout", To: "production", Now: time.Now()})
			check("verify", err)
			f.git("branch", "-q", "-D", p.Branch)
			_, err = Propose(ctx, f.repo, ProposeRequest{App: "checkout", From: "staging", To: "production", Path: production, Renderer: renderer})
			check("propose", err)
		})
	}
	t.Run("every check passed after the soak", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.propose()
		if _, err := Verify(context.Background(), f.repo, VerifyRequest{App: "checkout", To: "production", Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
	})
}
