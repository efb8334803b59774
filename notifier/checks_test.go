package notifier

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/internal/golden"
	"github.com/throughline-dev/throughline/promotion"
)

// withChecks is live declaring an error-ratio query and an HTTP probe, with
// the verifier's statuses of them (value of the query, verdicts) and a soak
// of 10m started at t0.
func withChecks(live *Live, ratio string, verdict v1alpha1.CheckVerdict) *Live {
	at := metav1.NewTime(t0.Add(20 * time.Minute))
	soak := metav1.NewTime(t0.Add(10 * time.Minute))
	live.Checks = &v1alpha1.RuntimeChecks{Soak: metav1.Duration{Duration: 10 * time.Minute}, Checks: []v1alpha1.RuntimeCheck{
		{Name: "error-ratio", Prometheus: &v1alpha1.PrometheusCheck{Query: `sum(rate(errors[5m]))`, Op: v1alpha1.ComparisonLess, Threshold: 0.01}},
		{Name: "healthz", HTTP: &v1alpha1.HTTPCheck{Service: v1alpha1.ServiceReference{Namespace: "shop", Name: "checkout", Port: 8080}, Path: "/healthz"}},
	}}
	live.Status.SoakStartedAt = &soak
	live.Status.Checks = []v1alpha1.CheckStatus{
		{Name: "error-ratio", Verdict: verdict, Value: ratio, LastEvaluated: at, ConsecutiveFailures: map[bool]int32{true: 3}[verdict == v1alpha1.CheckFailed]},
		{Name: "healthz", Verdict: v1alpha1.CheckPassed, Value: "200 in 4ms", LastEvaluated: at},
	}
	return live
}

// TestRuntimeCheckDecisions: a failing runtime check HALTS with class
// runtime, naming the check and its value; the soak is waited for; the
// ACCEPTED evidence carries every check with its value and the soak window;
// a passed rollout deadline halts (class live).
func TestRuntimeCheckDecisions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		live   *Live
		code   int
		result string
		state  promotion.State
		class  string
		want   []string // in the evidence file
	}{
		{"check failed", withChecks(liveWith("checkout", metav1.ConditionFalse, v1alpha1.ReasonCheckFailed, "error-ratio failed 3 times", health.Verified),
			"0.07", v1alpha1.CheckFailed), 200, resultHalted, promotion.Halted, evidence.ClassRuntime,
			[]string{`"reason": "runtime check failed: Acceptance shop/checkout: error-ratio (prometheus \"sum(rate(errors[5m]))\" \u003c 0.01) is Failed with value 0.07"`,
				`"class": "runtime"`, `"value": "0.07"`, `"threshold": 0.01`}},
		{"soaking", withChecks(liveWith("checkout", metav1.ConditionUnknown, v1alpha1.ReasonSoaking, "soak 5m of 10m", health.Verified),
			"0.001", v1alpha1.CheckPassed), 503, resultWait, promotion.Reconciling, "", nil},
		{"accepted after the soak", withChecks(verified("checkout"), "0.001", v1alpha1.CheckPassed), 200, resultAccepted, promotion.Accepted, "",
			[]string{`"soakStartedAt": "2026-`, `"soak": "10m0s"`, `"name": "healthz"`, `"service": "shop/checkout:8080"`, `"value": "200 in 4ms"`,
				`"verdict": "Passed"`, `"evaluatedAt": "2026-`}},
		{"rollout deadline exceeded", liveWith("checkout", metav1.ConditionFalse, v1alpha1.ReasonDeadlineExceeded, "not verified within 10m", health.Pending),
			200, resultHalted, promotion.Halted, ClassLive, []string{"rollout deadline exceeded"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "checkout")
			f.live.set("checkout", c.live)
			code, rep := f.argo(argoBody(f.desired["checkout"], "Healthy"))
			if code != c.code || rep.Result != c.result {
				t.Fatalf("%d %+v", code, rep)
			}
			rec := f.checkoutRecord()
			if rec.State != c.state {
				t.Fatalf("state %s", rec.State)
			}
			if c.want == nil {
				return
			}
			data := f.show(evidence.Path("production", "checkout", rec.PromotionID))
			ev, err := evidence.Parse("x", []byte(data))
			must(t, err)
			if ev.Class != c.class {
				t.Errorf("class %q, want %q", ev.Class, c.class)
			}
			for _, w := range c.want {
				if !strings.Contains(data, w) {
					t.Errorf("evidence lacks %s:\n%s", w, data)
				}
			}
		})
	}
}

// TestSpecChecksFromObject: the notifier reads spec.checks of the
// Acceptance object as the render wrote it.
func TestSpecChecksFromObject(t *testing.T) {
	t.Parallel()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "throughline.dev/v1alpha1", "kind": "Acceptance",
		"metadata": map[string]any{"name": "checkout", "namespace": "shop"},
		"spec": map[string]any{"renderedHash": hashA, "checks": map[string]any{"soak": "10m", "checks": []any{
			map[string]any{"name": "error-ratio", "prometheus": map[string]any{"query": "up", "op": "<", "threshold": 0.5}}}}}}}
	live, err := LiveFrom(u)
	must(t, err)
	if live.Checks == nil || live.Checks.Soak.Duration != 10*time.Minute || live.Checks.Checks[0].Prometheus.Threshold != 0.5 {
		t.Fatalf("checks %+v", live.Checks)
	}
	u.Object["spec"].(map[string]any)["checks"] = "not a mapping"
	if _, err := LiveFrom(u); err == nil {
		t.Fatal("a spec.checks that does not decode is read")
	}
}

// TestCheckUnverifiableHalts (issue 33): an Acceptance whose runtime check
// could not be measured within its deadline (Ready False,
// CheckUnverifiable, the verifier's verdict) HALTS the record with class
// runtime; the evidence carries the check with its last Unverifiable
// evaluation (why it could not be measured) and the reason names it. The
// wording is in testdata/check-unverifiable.golden.
func TestCheckUnverifiableHalts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout")
	live := withChecks(liveWith("checkout", metav1.ConditionFalse, v1alpha1.ReasonCheckUnverifiable,
		"check error-ratio could not be measured within the environment's reconcileDeadline 15m0s "+
			"(unverifiable since 2026-11-29T10:20:00Z): query returned no samples", health.Verified), "", v1alpha1.CheckUnverifiable)
	live.Status.VerifiedAt = nil
	live.Status.Checks[0].Message = "query returned no samples"
	f.live.set("checkout", live)
	code, rep := f.argo(argoBody(f.desired["checkout"], "Degraded"))
	if code != 200 || rep.Result != resultHalted {
		t.Fatalf("%d %+v; want 200 halted", code, rep)
	}
	rec := f.checkoutRecord()
	if rec.State != promotion.Halted {
		t.Fatalf("state %s, want HALTED", rec.State)
	}
	ev, err := evidence.Parse("x", []byte(f.show(evidence.Path("production", "checkout", rec.PromotionID))))
	must(t, err)
	if ev.Decision != promotion.Halted || ev.Class != evidence.ClassRuntime {
		t.Fatalf("decision %s class %q; want HALTED %s", ev.Decision, ev.Class, evidence.ClassRuntime)
	}
	var got *evidence.Check
	for i := range ev.Checks {
		if ev.Checks[i].Name == "error-ratio" {
			got = &ev.Checks[i]
		}
	}
	if got == nil || got.Verdict != string(v1alpha1.CheckUnverifiable) || got.Message != "query returned no samples" {
		t.Fatalf("evidence check %+v; want error-ratio Unverifiable with its last message", got)
	}
	if !strings.Contains(ev.Reason, "error-ratio") || rec.Reason != ev.Reason {
		t.Fatalf("record reason %q, evidence reason %q; want the same, naming the check", rec.Reason, ev.Reason)
	}
	golden.Compare(t, "testdata/check-unverifiable.golden", []byte(ev.Reason+"\n"))
}
