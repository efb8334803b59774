package health

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/internal/spantest"
	"github.com/throughline-dev/throughline/runtimecheck"
	"github.com/throughline-dev/throughline/tracing"
)

// TestVerifyTrace: one reconcile of an Acceptance is a health.verify span
// naming its app, environment, outcome and reason, with the image
// verification and each runtime check evaluated as its children (a check
// not due is not a span), and OnResult is called inside it (the log line
// names the trace).
func TestVerifyTrace(t *testing.T) {
	t.Parallel()
	ev := &scripted{script: map[string][]runtimecheck.Result{"errors": {fail("0.2")}, "latency": {pass("0.2")}}}
	l := newCheckLab(t, checksSpec("1m", prom("errors", "10s", 3), prom("latency", "30s", 1)), ev)
	acc := NewAcceptance()
	if err := l.c.Get(t.Context(), l.key, acc); err != nil {
		t.Fatal(err)
	}
	acc.SetLabels(map[string]string{v1alpha1.LabelApp: "checkout", v1alpha1.LabelEnvironment: "staging"})
	if err := l.c.Update(t.Context(), acc); err != nil {
		t.Fatal(err)
	}
	var logged string
	l.r.OnResult = func(ctx context.Context, _ types.NamespacedName, _ *Report, _ time.Duration, _ error) {
		logged = tracing.TraceID(ctx)
	}
	ctx, trace := spantest.Root(t)
	if _, err := l.r.Reconcile(ctx, reconcile.Request{NamespacedName: l.key}); err != nil {
		t.Fatal(err)
	}
	if logged != trace {
		t.Errorf("OnResult saw trace %q, want the reconcile's %q", logged, trace)
	}
	spans := spantest.Of(trace)
	var verify sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "health.verify" {
			verify = s
		}
	}
	if verify == nil {
		t.Fatalf("no health.verify span among %d", len(spans))
	}
	want := map[string]string{
		"throughline.acceptance": "shop/checkout", "throughline.app": "checkout", "throughline.environment": "staging",
		"throughline.result": "Pending", "throughline.reason": v1alpha1.ReasonSoaking,
	}
	got := spantest.Attributes(verify)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("health.verify %s = %q, want %q", k, got[k], v)
		}
	}
	children := map[string][]map[string]string{}
	for _, s := range spans {
		if s.Parent().SpanID() == verify.SpanContext().SpanID() {
			children[s.Name()] = append(children[s.Name()], spantest.Attributes(s))
		}
	}
	if len(children["health.images"]) != 1 || children["health.images"][0]["throughline.result"] != "Verified" {
		t.Errorf("health.images children: %v", children["health.images"])
	}
	checks := map[string]string{}
	for _, a := range children["health.check"] {
		checks[a["throughline.check"]] = a["throughline.result"] + " " + a["throughline.value"]
	}
	if checks["errors"] != "Failed 0.2" || checks["latency"] != "Passed 0.2" || len(checks) != 2 {
		t.Errorf("health.check children: %v", checks)
	}

	// Ten seconds later only errors is due: one health.check.
	l.now = l.now.Add(10 * time.Second)
	ctx, trace = spantest.Root(t)
	if _, err := l.r.Reconcile(ctx, reconcile.Request{NamespacedName: l.key}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range spantest.Of(trace) {
		if s.Name() == "health.check" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d health.check spans at t0+10s, want 1 (latency is not due)", n)
	}
}
