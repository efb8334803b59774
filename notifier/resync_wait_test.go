package notifier

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/health"
	"github.com/throughline-dev/throughline/promotion"
)

// TestResyncWaitsOutControllerFailure: the resync reads a Kustomization
// whose Ready is False with HealthCheckFailed (a rollout slower than its
// timeout) as the error event kustomize-controller sent: the promotion
// waits (nothing written, still RECONCILING); once the Kustomization is
// Ready at the desired commit the next pass accepts it (issue 22: it was
// HALTED by the failure, then "duplicate" for ever).
func TestResyncWaitsOutControllerFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "checkout")
	rev := f.desired["checkout"]
	f.live.set("checkout", liveWith("checkout", metav1.ConditionFalse, v1alpha1.ReasonRolloutInProgress, "3/6 updated", health.Pending))
	ks := resyncKs(3, "./apps/checkout/overlays/production", map[string]any{
		"observedGeneration": int64(3), "lastAttemptedRevision": "main@sha1:" + rev, "conditions": readyCond("False", "HealthCheckFailed"),
	})
	gvrs := map[schema.GroupVersionResource]string{ApplicationResource: "ApplicationList", KustomizationResource: "KustomizationList"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs, &ks)
	r := &Resyncer{Proc: f.handler.proc, Client: dyn}
	tip := f.tip()
	res := r.Once(ctx)
	if len(res) != 1 || res[0].Outcome != ResyncWait || !strings.Contains(res[0].Reason, "waiting: Kustomization/flux-system/checkout reports HealthCheckFailed") {
		t.Fatalf("controller failure: %+v, want wait", res)
	}
	if f.tip() != tip || f.checkoutRecord().State != promotion.Reconciling {
		t.Fatalf("the failure wrote to Git: record %s", f.checkoutRecord().State)
	}
	// The rollout finishes: the Acceptance is verified, the Kustomization Ready.
	f.live.set("checkout", verified("checkout"))
	ready := ks.DeepCopy()
	_ = unstructured.SetNestedField(ready.Object, map[string]any{
		"observedGeneration": int64(3), "lastAppliedRevision": "main@sha1:" + rev, "lastAttemptedRevision": "main@sha1:" + rev,
		"conditions": readyCond("True", "ReconciliationSucceeded"),
	}, "status")
	if _, err := dyn.Resource(KustomizationResource).Namespace("flux-system").Update(ctx, ready, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	res = r.Once(ctx)
	if len(res) != 1 || res[0].Outcome != ResyncAccepted {
		t.Fatalf("after recovery: %+v, want accepted", res)
	}
	if rec := f.checkoutRecord(); rec.State != promotion.Accepted {
		t.Fatalf("record %s %q, want ACCEPTED", rec.State, rec.Reason)
	}
}
