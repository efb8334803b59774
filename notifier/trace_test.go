package notifier

import (
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/throughline-dev/throughline/internal/spantest"
)

// TestDeliveryTrace: a Flux delivery carrying W3C trace context is one
// span tree in its sender's trace: notifier.delivery (child of the
// sender's span) -> notifier.write -> notifier.decide, named by app,
// environment, attempt and outcome, with no header value or body in any
// attribute.
func TestDeliveryTrace(t *testing.T) {
	const trace, parent = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	spantest.Install() // before the delivery
	f := newFixture(t, "checkout")
	body := fluxBody(t, "checkout", f.desired["checkout"], "ReconciliationSucceeded")
	code, rep := f.post("/v1/flux", body, map[string]string{SignatureHeader: sign(fluxKey, body),
		"traceparent": "00-" + trace + "-" + parent + "-01"})
	if code != 200 || rep.Result != resultAccepted {
		t.Fatalf("delivery: %d %+v", code, rep)
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spantest.Of(trace) {
		byName[s.Name()] = s
	}
	delivery, write, decide := byName["notifier.delivery"], byName["notifier.write"], byName["notifier.decide"]
	if delivery == nil || write == nil || decide == nil {
		t.Fatalf("spans of the trace: %v", byName)
	}
	for _, c := range []struct {
		span   sdktrace.ReadOnlySpan
		parent string
	}{{delivery, parent}, {write, delivery.SpanContext().SpanID().String()}, {decide, write.SpanContext().SpanID().String()}} {
		if got := c.span.Parent().SpanID().String(); got != c.parent {
			t.Errorf("%s: parent %s, want %s", c.span.Name(), got, c.parent)
		}
	}
	attrs := map[string]string{}
	for _, s := range []sdktrace.ReadOnlySpan{delivery, write, decide} {
		for k, v := range spantest.Attributes(s) {
			attrs[s.Name()+" "+k] = v
		}
	}
	for k, want := range map[string]string{
		"notifier.delivery throughline.app":          "checkout",
		"notifier.delivery throughline.environment":  "production",
		"notifier.delivery throughline.result":       resultAccepted,
		"notifier.delivery throughline.promotion_id": rep.PromotionID,
		"notifier.delivery throughline.commit":       rep.Commit,
		"notifier.decide throughline.decision":       "ACCEPTED",
		"notifier.write throughline.commit":          rep.Commit,
	} {
		if attrs[k] != want {
			t.Errorf("%s = %q, want %q", k, attrs[k], want)
		}
	}
	for k, v := range attrs {
		if strings.Contains(v, string(fluxKey)) || strings.Contains(v, sign(fluxKey, body)) || strings.Contains(v, string(body)) {
			t.Errorf("%s carries a secret or the body: %q", k, v)
		}
	}

	// Without trace context: a trace of its own, the delivery its root.
	code, rep = f.flux(body)
	if code != 200 || rep.Result != resultDuplicate {
		t.Fatalf("replay: %d %+v", code, rep)
	}
	for _, s := range spantest.All() {
		if s.Name() == "notifier.delivery" && s.SpanContext().TraceID().String() != trace && s.Parent().IsValid() {
			t.Errorf("a delivery without trace context has parent %s", s.Parent().SpanID())
		}
	}
}

// TestResyncTrace: a resync pass is a notifier.resync span with a
// notifier.resync.record child per RECONCILING record, under which the
// evidence commit is the notifier.write -> notifier.decide a delivery
// has; the Resynced (what serve logs) names the trace.
func TestResyncTrace(t *testing.T) {
	t.Parallel()
	ctx, trace := spantest.Root(t)
	f := newFixture(t, "checkout")
	rev := f.desired["checkout"]
	f.live.set("checkout", verified("checkout"))
	ks := resyncKs(3, "./apps/checkout/overlays/production", map[string]any{
		"observedGeneration": int64(3), "lastAppliedRevision": "main@sha1:" + rev, "lastAttemptedRevision": "main@sha1:" + rev,
		"conditions": readyCond("True", "ReconciliationSucceeded"),
	})
	gvrs := map[schema.GroupVersionResource]string{ApplicationResource: "ApplicationList", KustomizationResource: "KustomizationList"}
	r := &Resyncer{Proc: f.handler.proc, Client: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs, &ks)}
	res := r.Once(ctx)
	if len(res) != 1 || res[0].Outcome != ResyncAccepted {
		t.Fatalf("resync: %+v, want accepted", res)
	}
	if res[0].TraceID != trace {
		t.Errorf("Resynced.TraceID %q, want the pass's trace %q", res[0].TraceID, trace)
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spantest.Of(trace) {
		byName[s.Name()] = s
	}
	pass, one, write, decide := byName["notifier.resync"], byName["notifier.resync.record"], byName["notifier.write"], byName["notifier.decide"]
	if pass == nil || one == nil || write == nil || decide == nil {
		t.Fatalf("spans of the trace: %v", byName)
	}
	for _, c := range []struct{ child, parent sdktrace.ReadOnlySpan }{{one, pass}, {write, one}, {decide, write}} {
		if c.child.Parent().SpanID() != c.parent.SpanContext().SpanID() {
			t.Errorf("%s is not a child of %s", c.child.Name(), c.parent.Name())
		}
	}
	got := spantest.Attributes(one)
	for k, want := range map[string]string{
		"throughline.app": "checkout", "throughline.environment": "production", "throughline.result": ResyncAccepted,
		"throughline.promotion_id": res[0].PromotionID, "throughline.commit": res[0].Commit, "throughline.revision": rev,
		"throughline.object": res[0].Object,
	} {
		if got[k] != want {
			t.Errorf("notifier.resync.record %s = %q, want %q", k, got[k], want)
		}
	}
	if n := spantest.Attributes(pass)["throughline.records"]; n != "1" {
		t.Errorf("notifier.resync records = %q, want 1", n)
	}
}
