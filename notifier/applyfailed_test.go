package notifier

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/throughline-dev/throughline/evidence"
	"github.com/throughline-dev/throughline/promotion"
)

// denied is kustomize-controller's message for a dry-run a
// ValidatingAdmissionPolicy denies (issue 41): nothing is applied.
const denied = `Deployment/shop/checkout dry-run failed (Forbidden): deployments.apps "checkout" is forbidden: ` +
	`ValidatingAdmissionPolicy 'freeze' with binding 'freeze' denied request: updates are frozen`

// staleLive is the live Acceptance of the previous render: verified, for
// its own rendered hash hashB (what runs before the promotion's apply).
func staleLive() *Live {
	l := verified("checkout")
	l.RenderedHash, l.Status.RenderedHash = hashB, hashB
	return l
}

// argoFailed is an Argo CD notification for a sync operation that ended in
// phase (Failed, Error) with health, at rev.
func argoFailed(rev, phase, health, msg string) []byte {
	b, _ := json.Marshal(ArgoCDPayload{Trigger: "on-sync-failed", Application: "checkout", Namespace: "argocd", Environment: "production",
		Revision: rev, SyncRevision: rev, SyncStatus: "OutOfSync", Phase: phase, Health: health, Message: msg})
	return b
}

// argoRetrying is the resync's event for an Argo CD sync operation at rev
// still Running after n failed tries (operationState.retryCount).
func argoRetrying(rev string, n int64) []byte {
	b, _ := json.Marshal(ArgoCDPayload{Trigger: "resync", Application: "checkout", Namespace: "argocd", Environment: "production",
		Revision: rev, SyncRevision: rev, SyncStatus: "OutOfSync", Phase: "Running", Health: "Progressing", Message: denied, RetryCount: n})
	return b
}

// TestApplyFailureWaits (issue 41, item 1): a controller that applied
// nothing (kustomize-controller's dry-run denied by an admission policy, an
// Argo CD sync that failed) leaves the previous Acceptance live; that is the
// controller's failure, waited for until the environment's
// reconcileDeadline, then HALTED naming the controller's message. HALTED at
// once only when what was applied contradicts the record: the committed
// Acceptance differs from the record, or the controller applied (Flux
// health check, Argo CD sync succeeded) and another render runs. Before the
// fix every case here HALTED at once (class render).
func TestApplyFailureWaits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		committed string // the Acceptance committed in the overlay (Flux); "" none
		policy    string
		body      func(f *fixture) []byte
		argo      bool
		code      int
		result    string
		reason    string
		class     string
	}{
		{name: "flux dry-run denied", committed: hashA,
			body: func(f *fixture) []byte {
				return fluxFailure(t, "checkout", f.desired["checkout"], "ReconciliationFailed", denied)
			},
			code: 503, result: resultWait, reason: "waiting: Kustomization/flux-system/checkout reports ReconciliationFailed: " + denied},
		{name: "flux dry-run denied, no committed Acceptance",
			body: func(f *fixture) []byte {
				return fluxFailure(t, "checkout", f.desired["checkout"], "ReconciliationFailed", denied)
			},
			code: 503, result: resultWait, reason: "waiting: Kustomization/flux-system/checkout reports ReconciliationFailed"},
		{name: "flux build failed", committed: hashA,
			body: func(f *fixture) []byte {
				return fluxFailure(t, "checkout", f.desired["checkout"], "BuildFailed", "kustomize build failed")
			},
			code: 503, result: resultWait, reason: "waiting: Kustomization/flux-system/checkout reports BuildFailed"},
		{name: "flux dry-run denied, deadline passed", committed: hashA, policy: policyWithDeadline("10m"),
			body: func(f *fixture) []byte {
				return fluxFailure(t, "checkout", f.desired["checkout"], "ReconciliationFailed", denied)
			},
			code: 200, result: resultHalted, class: ClassLive,
			reason: "reconcileDeadline 10m0s passed: Kustomization/flux-system/checkout reports ReconciliationFailed: " + denied},
		{name: "flux dry-run denied, deadline not passed", committed: hashA, policy: policyWithDeadline("2h"),
			body: func(f *fixture) []byte {
				return fluxFailure(t, "checkout", f.desired["checkout"], "ReconciliationFailed", denied)
			},
			code: 503, result: resultWait, reason: "waiting:"},
		// What was applied contradicts the record: halted at once.
		{name: "flux applied, health check failed, another Acceptance live", committed: hashA,
			body: func(f *fixture) []byte {
				return fluxFailure(t, "checkout", f.desired["checkout"], "HealthCheckFailed", "timeout waiting for rollout")
			},
			code: 200, result: resultHalted, class: ClassRender, reason: "Flux did not apply the committed Acceptance"},
		{name: "flux dry-run denied, committed Acceptance stale", committed: hashB,
			body: func(f *fixture) []byte {
				return fluxFailure(t, "checkout", f.desired["checkout"], "ReconciliationFailed", denied)
			},
			code: 200, result: resultHalted, class: ClassRender, reason: "(stale: propose and rollback refresh it"},
		{name: "flux succeeded, another Acceptance live", committed: hashA,
			body: func(f *fixture) []byte {
				return fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded")
			},
			code: 200, result: resultHalted, class: ClassRender, reason: "Flux did not apply the committed Acceptance"},
		// Argo CD: a sync that failed applied nothing; a sync that
		// succeeded and left another render live contradicts the record.
		{name: "argo sync failed", argo: true,
			body: func(f *fixture) []byte { return argoFailed(f.desired["checkout"], "Failed", "Healthy", denied) },
			code: 503, result: resultWait, reason: "waiting: Application/argocd/checkout reports on-sync-failed: health Healthy, operation Failed: " + denied},
		{name: "argo sync error, degraded", argo: true,
			body: func(f *fixture) []byte {
				return argoFailed(f.desired["checkout"], "Error", "Degraded", "one or more objects failed to apply")
			},
			code: 503, result: resultWait, reason: "waiting: Application/argocd/checkout reports"},
		{name: "argo sync failed, deadline passed", argo: true, policy: policyWithDeadline("10m"),
			body: func(f *fixture) []byte { return argoFailed(f.desired["checkout"], "Failed", "Healthy", denied) },
			code: 200, result: resultHalted, class: ClassLive, reason: "reconcileDeadline 10m0s passed: Application/argocd/checkout reports on-sync-failed: " +
				"health Healthy, operation Failed: " + denied},
		// Argo CD retrying a refused apply: the operation is still Running.
		{name: "argo sync retrying", argo: true,
			body: func(f *fixture) []byte { return argoRetrying(f.desired["checkout"], 3) },
			code: 503, result: resultWait, reason: "waiting: Application/argocd/checkout reports resync: health Progressing, operation Running, " +
				"failed and retried 3 times: " + denied},
		{name: "argo sync retrying, deadline passed", argo: true, policy: policyWithDeadline("10m"),
			body: func(f *fixture) []byte { return argoRetrying(f.desired["checkout"], 3) },
			code: 200, result: resultHalted, class: ClassLive, reason: "reconcileDeadline 10m0s passed: Application/argocd/checkout reports resync: " +
				"health Progressing, operation Running, failed and retried 3 times: " + denied},
		{name: "argo synced, degraded, another render live", argo: true,
			body: func(f *fixture) []byte { return argoBody(f.desired["checkout"], "Degraded") },
			code: 200, result: resultHalted, class: ClassRender, reason: "rendered hash mismatch: the Acceptance declares " + hashB},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "checkout")
			files := map[string]string{}
			if c.policy != "" {
				files[promotion.PolicyFile] = c.policy
			}
			if len(files) > 0 {
				f.push(files)
			}
			if c.committed != "" {
				// Committed in the desired commit's overlay: Flux reports the
				// desired revision, which is this commit.
				f.desired["checkout"] = f.commitAcceptance("checkout", c.committed)
				f.redesire("checkout", f.desired["checkout"])
			}
			f.live.set("checkout", staleLive())
			tip := f.tip()
			var code int
			var rep reply
			if c.argo {
				code, rep = f.argo(c.body(f))
			} else {
				code, rep = f.flux(c.body(f))
			}
			if code != c.code || rep.Result != c.result || !strings.Contains(rep.Reason, c.reason) {
				t.Fatalf("%d %+v\nwant %d %s %q", code, rep, c.code, c.result, c.reason)
			}
			rec := f.checkoutRecord()
			if c.result == resultWait {
				if f.tip() != tip || rec.State != promotion.Reconciling {
					t.Fatalf("a wait wrote to Git: record %s %q", rec.State, rec.Reason)
				}
				return
			}
			evPath := evidence.Path("production", "checkout", rec.PromotionID)
			ev, err := evidence.Parse(evPath, []byte(f.show(evPath)))
			must(t, err)
			if rec.State != promotion.Halted || ev.Class != c.class || ev.Reason != rec.Reason {
				t.Fatalf("record %s %q, evidence class %s, want HALTED class %s", rec.State, rec.Reason, ev.Class, c.class)
			}
		})
	}
}

// TestAdmissionDenialThenLifted is issue 41's sequence through a delivery
// and the resync: the dry-run is denied (wait, nothing written, the commit
// status says waiting), the denial is lifted, Flux applies the committed
// Acceptance and the verifier verifies it: ACCEPTED.
func TestAdmissionDenialThenLifted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "checkout")
	f.desired["checkout"] = f.commitAcceptance("checkout", hashA)
	f.redesire("checkout", f.desired["checkout"])
	rev := f.desired["checkout"]
	f.live.set("checkout", staleLive())
	tip := f.tip()
	code, rep := f.flux(fluxFailure(t, "checkout", rev, "ReconciliationFailed", denied))
	if code != http.StatusServiceUnavailable || rep.Result != resultWait {
		t.Fatalf("denied: %d %+v, want 503 wait", code, rep)
	}
	ks := resyncKs(3, "./apps/checkout/overlays/production", map[string]any{
		"observedGeneration": int64(3), "lastAppliedRevision": "main@sha1:" + srcRev,
		"lastAttemptedRevision": "main@sha1:" + rev, "conditions": readyCond("False", "ReconciliationFailed"),
	})
	gvrs := map[schema.GroupVersionResource]string{ApplicationResource: "ApplicationList", KustomizationResource: "KustomizationList"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs, &ks)
	r := &Resyncer{Proc: f.handler.proc, Client: dyn}
	if res := r.Once(ctx); len(res) != 1 || res[0].Outcome != ResyncWait || !strings.Contains(res[0].Reason, "reports ReconciliationFailed") {
		t.Fatalf("resync while denied: %+v, want wait", res)
	}
	if f.tip() != tip || f.checkoutRecord().State != promotion.Reconciling {
		t.Fatalf("the denial wrote to Git: record %s %q", f.checkoutRecord().State, f.checkoutRecord().Reason)
	}
	f.mu.Lock()
	n := len(f.status)
	f.mu.Unlock()
	if n == 0 {
		t.Fatal("no waiting status posted")
	}
	// The policy is removed: Flux applies, the verifier verifies.
	f.live.set("checkout", verified("checkout"))
	ready := ks.DeepCopy()
	_ = unstructured.SetNestedField(ready.Object, map[string]any{
		"observedGeneration": int64(3), "lastAppliedRevision": "main@sha1:" + rev, "lastAttemptedRevision": "main@sha1:" + rev,
		"conditions": readyCond("True", "ReconciliationSucceeded"),
	}, "status")
	if _, err := dyn.Resource(KustomizationResource).Namespace("flux-system").Update(ctx, ready, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if res := r.Once(ctx); len(res) != 1 || res[0].Outcome != ResyncAccepted {
		t.Fatalf("after the denial is lifted: %+v, want accepted", res)
	}
	if rec := f.checkoutRecord(); rec.State != promotion.Accepted {
		t.Fatalf("record %s %q, want ACCEPTED", rec.State, rec.Reason)
	}
}

// redesire rewrites app's RECONCILING record on origin's main to desire
// commit (as promote's merge records the merge commit).
func (f *fixture) redesire(app, commit string) {
	f.t.Helper()
	y, err := reconciling(f.t, app, commit).Marshal()
	must(f.t, err)
	f.push(map[string]string{promotion.RecordPath(app, "production"): string(y)})
}
