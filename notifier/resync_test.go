package notifier

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/throughline-dev/throughline/promotion"
)

// The resync's own tests against a real API server and Git server are in
// e2e/notifier (resync_test.go); these read controller objects only.

func resyncApp(name, path string, labels map[string]any, status map[string]any) unstructured.Unstructured {
	md := map[string]any{"name": name, "namespace": "argocd"}
	if labels != nil {
		md["labels"] = labels
	}
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": md,
		"spec":   map[string]any{"source": map[string]any{"path": path}, "destination": map[string]any{"namespace": "shop"}},
		"status": status,
	}}
}

func resyncKs(gen int64, path string, status map[string]any) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "checkout", "namespace": "flux-system", "generation": gen},
		"spec":     map[string]any{"path": path, "targetNamespace": "shop"},
		"status":   status,
	}}
}

func readyCond(status, reason string) []any {
	return []any{map[string]any{"type": "Ready", "status": status, "reason": reason, "message": "m",
		"lastTransitionTime": "2026-11-29T10:00:00Z", "observedGeneration": int64(3)}}
}

func argoStatus(phase, health, syncRev, opRev string) map[string]any {
	st := map[string]any{"sync": map[string]any{"status": "Synced", "revision": syncRev}, "health": map[string]any{"status": health}}
	if phase != "" {
		st["operationState"] = map[string]any{"phase": phase, "syncResult": map[string]any{"revision": opRev}}
	}
	return st
}

// retrying sets st's operationState.retryCount to n and its message to
// a denied apply's.
func retrying(st map[string]any, n int64) map[string]any {
	op := st["operationState"].(map[string]any)
	op["retryCount"], op["message"] = n, "one or more objects failed to apply, reason: "+denied
	return st
}

// StatusEvent decides only on what the shipped triggers would send, and
// never on a status older than its object's spec.
func TestStatusEvent(t *testing.T) {
	t.Parallel()
	const p = "apps/checkout/overlays/production"
	for _, tc := range []struct {
		name     string
		obj      unstructured.Unstructured
		wait     string // substring of why there is no event yet
		revision string
		degraded bool
	}{
		{name: "argo synced healthy", obj: resyncApp("checkout", p, nil, argoStatus("Succeeded", "Healthy", srcRev, stgRev)), revision: stgRev},
		{name: "argo sync revision when no sync result", obj: resyncApp("checkout", p, nil, argoStatus("Succeeded", "Progressing", srcRev, "")),
			revision: srcRev},
		{name: "argo operation running", obj: resyncApp("checkout", p, nil, argoStatus("Running", "Healthy", srcRev, stgRev)),
			wait: "neither finished nor Degraded"},
		// A sync the API server refused, retried by Argo CD: failed, still Running.
		{name: "argo operation retrying a failed sync", obj: resyncApp("checkout", p, nil, retrying(argoStatus("Running", "Progressing", srcRev, stgRev), 2)),
			revision: stgRev, degraded: true},
		{name: "argo never synced", obj: resyncApp("checkout", p, nil, nil), wait: "neither finished nor Degraded"},
		{name: "argo degraded", obj: resyncApp("checkout", p, nil, argoStatus("Running", "Degraded", srcRev, stgRev)), revision: stgRev, degraded: true},
		{name: "argo short revision", obj: resyncApp("checkout", p, nil, argoStatus("Succeeded", "Healthy", "abc", "abc")), wait: "neither a full commit id nor an OCI digest"},
		{name: "flux ready", obj: resyncKs(3, p, map[string]any{"observedGeneration": int64(3), "lastAppliedRevision": "main@sha1:" + stgRev,
			"conditions": readyCond("True", "ReconciliationSucceeded")}), revision: stgRev},
		{name: "flux stale status", obj: resyncKs(4, p, map[string]any{"observedGeneration": int64(3), "lastAppliedRevision": "main@sha1:" + stgRev,
			"conditions": readyCond("True", "ReconciliationSucceeded")}), wait: "generation 3, the spec is at 4"},
		{name: "flux progressing", obj: resyncKs(3, p, map[string]any{"observedGeneration": int64(3), "lastAppliedRevision": "main@sha1:" + stgRev,
			"conditions": readyCond("Unknown", "Progressing")}), wait: "not reconciled yet"},
		{name: "flux health check failed", obj: resyncKs(3, p, map[string]any{"observedGeneration": int64(3), "lastAppliedRevision": "main@sha1:" + srcRev,
			"lastAttemptedRevision": "main@sha1:" + stgRev, "conditions": readyCond("False", "HealthCheckFailed")}), revision: stgRev, degraded: true},
		{name: "flux no ready", obj: resyncKs(3, p, map[string]any{"observedGeneration": int64(3)}), wait: "no Ready condition"},
		{name: "flux bad revision", obj: resyncKs(3, p, map[string]any{"observedGeneration": int64(3), "lastAppliedRevision": "main@sha1:xyz",
			"conditions": readyCond("True", "ReconciliationSucceeded")}), wait: "is neither <ref>@sha1:<commit>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev, why := StatusEvent(tc.obj, "checkout", "production")
			if tc.wait != "" {
				if !strings.Contains(why, tc.wait) {
					t.Fatalf("why %q, want %q (event %+v)", why, tc.wait, ev)
				}
				return
			}
			if why != "" {
				t.Fatalf("no event: %s", why)
			}
			if tc.degraded && tc.obj.GetKind() == KindApplication && !ev.ApplyFailed {
				if retries, _, _ := unstructured.NestedInt64(tc.obj.Object, "status", "operationState", "retryCount"); retries > 0 {
					t.Fatalf("a retried sync is not an apply failure: %+v", ev)
				}
			}
			if ev.Revision != tc.revision || ev.Degraded != tc.degraded || ev.App != "checkout" || ev.Environment != "production" ||
				ev.Controller != ResyncController || ev.Ref.Name != "checkout" || ev.Ref.Kind != tc.obj.GetKind() {
				t.Fatalf("event %+v", ev)
			}
		})
	}
}

// A record's controller object is the one whose source path is the
// record's target path; a label naming another app or environment, or a
// second object with the same path (ambiguous), is never picked blindly.
func TestControllersOf(t *testing.T) {
	t.Parallel()
	rec := reconciling(t, "checkout", srcRev)
	prod, stg := rec.Target.Path, "apps/checkout/overlays/staging"
	objs := []unstructured.Unstructured{
		resyncApp("checkout-staging", stg, nil, nil),
		resyncApp("checkout", "./"+prod, map[string]any{"throughline.dev/environment": "production"}, nil),
		resyncApp("other", prod, map[string]any{"throughline.dev/app": "payments"}, nil),
		resyncApp("wrong-env", prod, map[string]any{"throughline.dev/environment": "staging"}, nil),
	}
	got := controllersOf(rec, objs, "")
	if len(got) != 1 || got[0].GetName() != "checkout" {
		t.Fatalf("controllers %v", names(got))
	}
	got = controllersOf(rec, append(objs, resyncKs(1, "./"+prod, nil)), "")
	if len(got) != 2 {
		t.Fatalf("controllers %v, want both", names(got))
	}
	if got := controllersOf(&promotion.Record{App: "checkout", Target: promotion.Target{Environment: "production", Path: "apps/none"}}, objs, ""); len(got) != 0 {
		t.Fatalf("controllers %v, want none", names(got))
	}
}

func names(us []unstructured.Unstructured) []string {
	var out []string
	for _, u := range us {
		out = append(out, objectName(u))
	}
	return out
}
