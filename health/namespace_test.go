package health

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// TestAcceptanceVouchesOnlyForItsNamespace is issue 22's false Verified:
// a Flux Kustomization with targetNamespace: checkout put the Acceptance
// in checkout while it named the Deployment of checkout-production, whose
// 6 Pods were healthy, and serve said Verified for a Deployment the
// Kustomization never applied. An Acceptance names workloads of its own
// namespace only (an empty namespace is its own); any other is Invalid,
// naming the workload, before anything is read.
func TestAcceptanceVouchesOnlyForItsNamespace(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		accNS    string
		wlNS     any // spec.workloads[0].namespace; nil leaves it out
		outcome  Outcome
		reason   string
		contains string
	}{
		{"own namespace", "ns-0", "ns-0", Verified, v1alpha1.ReasonVerified, ""},
		{"namespace left out", "ns-0", nil, Verified, v1alpha1.ReasonVerified, ""},
		{"another namespace, healthy there", "checkout", "ns-0", Mismatch, v1alpha1.ReasonInvalid,
			"spec.workloads[0]: Deployment ns-0/web-0 is outside the Acceptance's namespace checkout"},
		{"another namespace, not there", "ns-0", "kube-system", Mismatch, v1alpha1.ReasonInvalid, "Deployment kube-system/web-0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newBenchFixture(t, 1, 2)
			acc := f.acceptances[0]
			acc.SetNamespace(c.accNS)
			ws, _, _ := unstructured.NestedSlice(acc.Object, "spec", "workloads")
			w := ws[0].(map[string]any)
			if c.wlNS == nil {
				delete(w, "namespace")
			} else {
				w["namespace"] = c.wlNS
			}
			_ = unstructured.SetNestedSlice(acc.Object, ws, "spec", "workloads")
			rep, err := f.verifier.Verify(context.Background(), acc)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Outcome != c.outcome || rep.Reason != c.reason || !strings.Contains(rep.Message, c.contains) {
				t.Fatalf("%s %s %q, want %s %s containing %q", rep.Outcome, rep.Reason, rep.Message, c.outcome, c.reason, c.contains)
			}
		})
	}
}
