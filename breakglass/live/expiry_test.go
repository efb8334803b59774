package live

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/throughline-dev/throughline/breakglass"
)

func pausedKustomization(name string, expires time.Time) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(breakglass.KustomizationGVK)
	u.SetNamespace("flux-system")
	u.SetName(name)
	u.SetAnnotations(map[string]string{breakglass.AnnotationExpiresAt: expires.UTC().Format(time.RFC3339), breakglass.AnnotationTicket: "INC-7"})
	return u
}

// TestExpiryGaugeResets: issue 22 saw throughline_breakglass_pause_expired
// stay at 1 after the pause ended. When the pause annotations are gone the
// gauge goes back to 0; when the object is gone its series is removed.
func TestExpiryGaugeResets(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	k := pausedKustomization("checkout-production", now.Add(-time.Hour))
	other := pausedKustomization("payments-production", now.Add(-time.Hour))
	c := fake.NewClientBuilder().WithObjects(k, other).Build()
	gauge := NewExpiryGauge()
	m := &ExpiryMonitor{Client: c, Gauge: gauge, Now: func() time.Time { return now }}
	value := func(name string) float64 {
		return testutil.ToFloat64(gauge.WithLabelValues("Kustomization", "flux-system", name))
	}

	if exp, err := m.Check(ctx); err != nil || len(exp) != 2 {
		t.Fatalf("expired %v, err %v", exp, err)
	}
	if value("checkout-production") != 1 {
		t.Fatalf("gauge %v, want 1 while the pause outlives its expiry", value("checkout-production"))
	}
	// resume removes the pause annotations.
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(breakglass.KustomizationGVK)
	if err := c.Get(ctx, client.ObjectKeyFromObject(k), live); err != nil {
		t.Fatal(err)
	}
	live.SetAnnotations(nil)
	if err := c.Update(ctx, live); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, other); err != nil {
		t.Fatal(err)
	}
	if exp, err := m.Check(ctx); err != nil || len(exp) != 0 {
		t.Fatalf("after the pause ended: expired %v, err %v", exp, err)
	}
	if v := value("checkout-production"); v != 0 {
		t.Fatalf("gauge %v after the pause ended, want 0", v)
	}
	if n := testutil.CollectAndCount(gauge); n != 1 {
		t.Fatalf("%d series, want 1 (the deleted Kustomization's series removed)", n)
	}
}
