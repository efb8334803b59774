package notifier

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/promotion"
)

// fluxFailure is a Flux error event (what kustomize-controller sends for a
// failed apply or health check) about app at rev.
func fluxFailure(t testing.TB, app, rev, reason, msg string) []byte {
	t.Helper()
	var ev eventv1.Event
	must(t, json.Unmarshal(fluxBody(t, app, rev, reason), &ev))
	ev.Severity, ev.Message = eventv1.EventSeverityError, msg
	b, err := json.Marshal(ev)
	must(t, err)
	return b
}

// TestControllerFailureWaits is the sequence of issue 22: a schema error
// (ReconciliationFailed), then a rollout slower than the Kustomization's
// timeout (HealthCheckFailed), then Ready. The controller's failures are
// not the artifact's: each is answered "wait" (nothing written, the record
// stays RECONCILING, the commit status says waiting), and the Ready event
// accepts. Before the fix the first failure HALTED the promotion and the
// Ready event was answered "duplicate"/"ignored".
func TestControllerFailureWaits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "checkout")
	rev := f.desired["checkout"]
	tip := f.tip()
	for _, c := range []struct{ reason, msg string }{
		{"ReconciliationFailed", `Deployment/checkout-production/checkout dry-run failed: .spec.template.spec.containers[0].prots: field not declared in schema`},
		{"HealthCheckFailed", "timeout waiting for: [Deployment/checkout-production/checkout status: 'InProgress']"},
	} {
		// The verifier has not verified the new Pods yet.
		f.live.set("checkout", liveWith("checkout", metav1.ConditionFalse, v1alpha1.ReasonRolloutInProgress, "3/6 updated", health.Pending))
		code, rep := f.flux(fluxFailure(t, "checkout", rev, c.reason, c.msg))
		if code != http.StatusServiceUnavailable || rep.Result != resultWait || !strings.Contains(rep.Reason, "waiting: Kustomization/flux-system/checkout reports "+c.reason) {
			t.Fatalf("%s: %d %+v, want 503 wait naming the controller's failure", c.reason, code, rep)
		}
		if f.tip() != tip || f.checkoutRecord().State != promotion.Reconciling {
			t.Fatalf("%s: wrote to Git (record %s)", c.reason, f.checkoutRecord().State)
		}
	}
	f.mu.Lock()
	waits := len(f.status)
	var w0 string
	if waits > 0 {
		w0 = string(f.status[0].Decision) + " " + f.status[0].Reason
	}
	f.mu.Unlock()
	if waits != 2 || !strings.HasPrefix(w0, "RECONCILING waiting: Kustomization/flux-system/checkout reports ReconciliationFailed") {
		t.Fatalf("commit statuses while waiting: %d (%q), want 2 RECONCILING waiting", waits, w0)
	}
	// The same failure again posts no second status.
	f.flux(fluxFailure(t, "checkout", rev, "HealthCheckFailed", "timeout waiting for: [Deployment/checkout-production/checkout status: 'InProgress']"))
	if f.mu.Lock(); len(f.status) != 2 {
		t.Errorf("a repeated failure posted %d statuses, want 2", len(f.status))
	}
	f.mu.Unlock()
	// The rollout finishes: everything turns Ready.
	f.live.set("checkout", verified("checkout"))
	code, rep := f.flux(fluxBody(t, "checkout", rev, "ReconciliationSucceeded"))
	if code != http.StatusOK || rep.Result != resultAccepted {
		t.Fatalf("Ready after the failures: %d %+v, want 200 accepted", code, rep)
	}
	if rec := f.checkoutRecord(); rec.State != promotion.Accepted {
		t.Fatalf("record %s %q, want ACCEPTED", rec.State, rec.Reason)
	}
}

// TestWhatHalts: HALTED is reserved for the artifact (the Acceptance's
// image mismatch or Invalid, whatever the controller says) and for the
// environment's reconcileDeadline passing while the controller fails;
// a controller failure alone, from Flux or Argo CD, waits.
func TestWhatHalts(t *testing.T) {
	t.Parallel()
	mismatch := liveWith("checkout", metav1.ConditionFalse, v1alpha1.ReasonImageMismatch, "app runs sha256:ee", health.Mismatch)
	pending := liveWith("checkout", metav1.ConditionFalse, v1alpha1.ReasonRolloutInProgress, "3/6 updated", health.Pending)
	for _, c := range []struct {
		name     string
		live     *Live // nil: no Acceptance applied yet
		policy   string
		argo     string // Argo CD health; "" sends a Flux HealthCheckFailed
		code     int
		result   string
		reason   string
		decision promotion.State
	}{
		{"flux failure, rollout pending", pending, "", "", 503, resultWait, "waiting: Kustomization/flux-system/checkout reports HealthCheckFailed", promotion.Reconciling},
		{"flux failure, no Acceptance applied", nil, "", "", 503, resultWait, "waiting: Kustomization/flux-system/checkout reports", promotion.Reconciling},
		{"flux failure, verified", verified("checkout"), "", "", 503, resultWait, "waiting:", promotion.Reconciling},
		{"flux failure, image mismatch", mismatch, "", "", 200, resultHalted, "image mismatch", promotion.Halted},
		{"argo degraded, verified", verified("checkout"), "", "Degraded", 503, resultWait, "waiting: Application/argocd/checkout reports", promotion.Reconciling},
		{"argo degraded, image mismatch", mismatch, "", "Degraded", 200, resultHalted, "image mismatch", promotion.Halted},
		{"flux failure, deadline not passed", pending, policyWithDeadline("2h"), "", 503, resultWait, "waiting:", promotion.Reconciling},
		{"flux failure, deadline passed", pending, policyWithDeadline("10m"), "", 200, resultHalted,
			"reconcileDeadline 10m0s passed: Kustomization/flux-system/checkout reports HealthCheckFailed", promotion.Halted},
		{"argo degraded, no Acceptance, deadline passed", nil, policyWithDeadline("10m"), "Degraded", 200, resultHalted,
			"reconcileDeadline 10m0s passed: Application/argocd/checkout reports", promotion.Halted},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "checkout")
			if c.policy != "" {
				f.push(map[string]string{promotion.PolicyFile: c.policy})
			}
			if c.live == nil {
				delete(f.live.m, "checkout")
			} else {
				f.live.set("checkout", c.live)
			}
			var code int
			var rep reply
			if c.argo != "" {
				code, rep = f.argo(argoBody(f.desired["checkout"], c.argo))
			} else {
				code, rep = f.flux(fluxFailure(t, "checkout", f.desired["checkout"], "HealthCheckFailed", "timeout waiting for rollout"))
			}
			if code != c.code || rep.Result != c.result || !strings.Contains(rep.Reason, c.reason) {
				t.Fatalf("%d %+v, want %d %s %q", code, rep, c.code, c.result, c.reason)
			}
			if rec := f.checkoutRecord(); rec.State != c.decision {
				t.Fatalf("record %s %q, want %s", rec.State, rec.Reason, c.decision)
			}
		})
	}
}
