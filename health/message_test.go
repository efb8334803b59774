package health

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// TestMessagesNameTheWorkloadOnce: issue 22 read "Deployment X: Deployment
// X: generation 2 not observed yet". The report's message names each
// workload once, and a workload's own message (status.workloads[].message,
// beside its kind and name) does not name it at all.
func TestMessagesNameTheWorkloadOnce(t *testing.T) {
	t.Parallel()
	f := newBenchFixture(t, 1, 2)
	var d appsv1.Deployment
	if err := f.reader.Get(context.Background(), keyOf("ns-0", "web-0"), &d); err != nil {
		t.Fatal(err)
	}
	d.Generation = 2 // a new spec the deployment controller has not seen yet
	f.reader.add(&d)
	rep, err := f.verifier.Verify(context.Background(), f.acceptances[0])
	if err != nil {
		t.Fatal(err)
	}
	id := "Deployment ns-0/web-0"
	if rep.Reason != v1alpha1.ReasonRolloutInProgress || strings.Count(rep.Message, id) != 1 || !strings.Contains(rep.Message, "generation 2 not observed yet") {
		t.Fatalf("%s %q, want %s naming %s once", rep.Reason, rep.Message, v1alpha1.ReasonRolloutInProgress, id)
	}
	if w := rep.Workloads[0].Message; strings.Contains(w, "web-0") {
		t.Fatalf("workload message %q names the workload its entry already names", w)
	}
	// A workload the verifier cannot read the Pods of (no selector): the
	// same, for the error turned message.
	d.Spec.Selector = nil
	f.reader.add(&d)
	rep, err = f.verifier.Verify(context.Background(), f.acceptances[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(rep.Message, id) != 1 || strings.Contains(rep.Workloads[0].Message, "web-0") {
		t.Fatalf("no selector: report %q, workload %q", rep.Message, rep.Workloads[0].Message)
	}
}

func keyOf(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
