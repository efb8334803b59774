package runtimecheck_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/throughline-dev/throughline/api/v1alpha1"
	"github.com/throughline-dev/throughline/internal/testenv"
	"github.com/throughline-dev/throughline/runtimecheck"
)

// TestRealPrometheus evaluates checks against a real Prometheus (Debian's
// package) scraping an exporter the test controls, then stopped.
func TestRealPrometheus(t *testing.T) {
	exp := testenv.StartExporter(t)
	ratio := exp.Gauge(t, "checkout_error_ratio", prometheus.Labels{"app": "checkout"})
	exp.Gauge(t, "checkout_pods", prometheus.Labels{"pod": "a"})
	exp.Gauge(t, "checkout_pods_b", nil)
	ratio.Set(0.01)
	srv := testenv.StartPrometheus(t, exp.Target)
	p, err := runtimecheck.NewPrometheus(runtimecheck.PrometheusConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eval := func(query string, op v1alpha1.Comparison, threshold float64) runtimecheck.Result {
		return p.Evaluate(ctx, &v1alpha1.PrometheusCheck{Query: query, Op: op, Threshold: threshold}, 5*time.Second)
	}
	wait := func(query string, verdict v1alpha1.CheckVerdict) runtimecheck.Result {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			r := eval(query, "<", 0.05)
			if r.Verdict == verdict {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %+v, want %s", query, r, verdict)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	q := `max(checkout_error_ratio{app="checkout"})`
	if r := wait(q, v1alpha1.CheckPassed); r.Value != "0.01" {
		t.Fatalf("passed with value %q", r.Value)
	}
	ratio.Set(0.2)
	if r := wait(q, v1alpha1.CheckFailed); r.Value != "0.2" {
		t.Fatalf("failed with value %q", r.Value)
	}
	for _, tt := range []struct{ query, msg string }{
		{`checkout_error_ratio{app="payments"}`, "0 samples"},
		{`{__name__=~"checkout_pods.*"}`, "2 samples"},
		{`vector(0) / vector(0)`, "NaN"},
		{`sum(rate(checkout_error_ratio[1m]`, "querying Prometheus"},
		{`checkout_error_ratio[1m]`, "matrix"},
	} {
		if r := eval(tt.query, "<", 1); r.Verdict != v1alpha1.CheckUnverifiable || !strings.Contains(r.Message, tt.msg) {
			t.Errorf("%s: %+v, want Unverifiable containing %q", tt.query, r, tt.msg)
		}
	}
	srv.Stop()
	if r := eval(q, ">", 0); r.Verdict != v1alpha1.CheckUnverifiable || !strings.Contains(r.Message, "querying Prometheus") {
		t.Fatalf("Prometheus stopped: %+v", r)
	}
}
