package health

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/exitcode"
)

func testAcceptance(name string, spec map[string]any) *unstructured.Unstructured {
	u := NewAcceptance()
	u.SetNamespace("shop")
	u.SetName(name)
	u.SetGeneration(1)
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}

func TestAwait(t *testing.T) {
	t.Parallel()
	s := runtime.NewScheme()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(clientgoscheme.AddToScheme(s))
	missingWorkload := map[string]any{"app": "web", "renderedHash": dg('1'), "objectCount": int64(1),
		"workloads": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
			"containers": []any{map[string]any{"name": "app", "path": "spec.template.spec.containers[0]", "image": "r/web@" + dg('2'), "digest": dg('2')}}}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		testAcceptance("invalid", map[string]any{"app": ""}),
		testAcceptance("pending", missingWorkload),
	).Build()
	v := &Verifier{Client: c}
	for _, tc := range []struct {
		name           string
		wait, interval time.Duration
		cancel         bool
		reason         string
		code           int
		minReports     int
		maxReports     int
	}{
		{name: "missing", code: exitcode.Invalid},
		{name: "invalid", wait: time.Minute, interval: time.Millisecond, reason: v1alpha1.ReasonInvalid, minReports: 1, maxReports: 1},
		{name: "pending", reason: v1alpha1.ReasonWorkloadNotFound, minReports: 1, maxReports: 1},
		{name: "pending", wait: 300 * time.Millisecond, interval: 20 * time.Millisecond, reason: v1alpha1.ReasonWorkloadNotFound, minReports: 3, maxReports: 16},
		{name: "pending", wait: time.Minute, interval: time.Minute, reason: v1alpha1.ReasonWorkloadNotFound, minReports: 1, maxReports: 1},
		{name: "pending", wait: time.Minute, interval: 10 * time.Millisecond, cancel: true, code: exitcode.Pending, minReports: 1, maxReports: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n := 0
			rep, err := v.Await(ctx, client.ObjectKey{Namespace: "shop", Name: tc.name}, tc.wait, tc.interval, func(r *Report) {
				n++
				if tc.cancel {
					cancel()
				}
			})
			if tc.code != 0 {
				if exitcode.Code(err) != tc.code || rep != nil {
					t.Fatalf("Await = %v, %v (exit %d), want exit %d", rep, err, exitcode.Code(err), tc.code)
				}
				if tc.cancel && !errors.Is(err, context.Canceled) {
					t.Errorf("%v does not wrap the cancellation", err)
				}
			} else if err != nil || rep.Reason != tc.reason {
				t.Fatalf("Await = %+v, %v; want reason %s", rep, err, tc.reason)
			}
			if n < tc.minReports || n > tc.maxReports {
				t.Errorf("%d reports, want %d..%d", n, tc.minReports, tc.maxReports)
			}
		})
	}
}

func TestReportDecided(t *testing.T) {
	t.Parallel()
	for o, want := range map[Outcome]bool{Verified: true, Mismatch: true, Pending: false, Unverifiable: false} {
		if got := (&Report{Outcome: o}).Decided(); got != want {
			t.Errorf("%s: Decided() = %v, want %v", o, got, want)
		}
	}
}
