package runtimecheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/throughline-dev/throughline/api/v1alpha1"
)

// promAPI answers every query with body (a Prometheus HTTP API answer) and
// status, as a Prometheus (or a proxy in front of one) could.
func promAPI(t *testing.T, status int, body string, delay time.Duration) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func vector(values ...string) string {
	var samples []string
	for i, v := range values {
		samples = append(samples, `{"metric":{"pod":"p`+string(rune('0'+i))+`"},"value":[1800000000,"`+v+`"]}`)
	}
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(samples, ",") + `]}}`
}

// TestPrometheusVerdicts attacks the Prometheus evaluation with every answer
// that must not pass: only exactly one number compared with the threshold
// decides; everything else is Unverifiable.
func TestPrometheusVerdicts(t *testing.T) {
	t.Parallel()
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		return "http://" + addr
	}()
	check := &v1alpha1.PrometheusCheck{Query: "sum(rate(errors[1m])) / sum(rate(requests[1m]))", Op: "<", Threshold: 0.05}
	tests := []struct {
		name    string
		url     string
		check   *v1alpha1.PrometheusCheck
		verdict v1alpha1.CheckVerdict
		value   string
		msg     string
	}{
		{"one sample under the threshold", promAPI(t, 200, vector("0.01"), 0), check, v1alpha1.CheckPassed, "0.01", "0.01 < 0.05"},
		{"one sample over the threshold", promAPI(t, 200, vector("0.2"), 0), check, v1alpha1.CheckFailed, "0.2", "not 0.2 < 0.05"},
		{"scalar", promAPI(t, 200, `{"status":"success","data":{"resultType":"scalar","result":[1800000000,"0.01"]}}`, 0),
			check, v1alpha1.CheckPassed, "0.01", ""},
		{"threshold equal, op <=", promAPI(t, 200, vector("0.05"), 0),
			&v1alpha1.PrometheusCheck{Query: "q", Op: "<=", Threshold: 0.05}, v1alpha1.CheckPassed, "0.05", ""},
		{"zero samples (no traffic, or a selector that matches nothing)", promAPI(t, 200, vector(), 0),
			check, v1alpha1.CheckUnverifiable, "", "0 samples"},
		{"several samples", promAPI(t, 200, vector("0.01", "0.9"), 0), check, v1alpha1.CheckUnverifiable, "", "2 samples"},
		{"NaN (0/0)", promAPI(t, 200, vector("NaN"), 0), check, v1alpha1.CheckUnverifiable, "", "NaN"},
		{"warnings only", promAPI(t, 200, `{"status":"success","data":{"resultType":"vector","result":[]},"warnings":["remote read failed"]}`, 0),
			check, v1alpha1.CheckUnverifiable, "", "warnings"},
		{"a sample with warnings (partial data)",
			promAPI(t, 200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"0.01"]}]},"warnings":["partial"]}`, 0),
			check, v1alpha1.CheckUnverifiable, "", "partial"},
		{"matrix", promAPI(t, 200, `{"status":"success","data":{"resultType":"matrix","result":[]}}`, 0), check, v1alpha1.CheckUnverifiable, "", "matrix"},
		{"bad query", promAPI(t, 400, `{"status":"error","errorType":"bad_data","error":"parse error"}`, 0), check, v1alpha1.CheckUnverifiable, "", "parse error"},
		{"503", promAPI(t, 503, `overloaded`, 0), check, v1alpha1.CheckUnverifiable, "", "querying Prometheus"},
		{"500 with a success body", promAPI(t, 500, vector("0.01"), 0), check, v1alpha1.CheckUnverifiable, "", "querying Prometheus"},
		{"timeout", promAPI(t, 200, vector("0.01"), time.Second), check, v1alpha1.CheckUnverifiable, "", "querying Prometheus"},
		{"unreachable", closed, check, v1alpha1.CheckUnverifiable, "", "querying Prometheus"},
		{"unknown op", promAPI(t, 200, vector("0.01"), 0), &v1alpha1.PrometheusCheck{Query: "q", Op: "=<", Threshold: 1},
			v1alpha1.CheckUnverifiable, "", "op"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPrometheus(PrometheusConfig{URL: tt.url})
			if err != nil {
				t.Fatal(err)
			}
			r := p.Evaluate(context.Background(), tt.check, 300*time.Millisecond)
			if r.Verdict != tt.verdict || r.Value != tt.value || !strings.Contains(r.Message, tt.msg) {
				t.Fatalf("got %s %q %q; want %s %q containing %q", r.Verdict, r.Value, r.Message, tt.verdict, tt.value, tt.msg)
			}
		})
	}
}

func TestPrometheusNotConfigured(t *testing.T) {
	t.Parallel()
	var p *Prometheus
	r := p.Evaluate(context.Background(), &v1alpha1.PrometheusCheck{Query: "up", Op: ">", Threshold: 0}, time.Second)
	if r.Verdict != v1alpha1.CheckUnverifiable || !strings.Contains(r.Message, "--prometheus-url") {
		t.Fatalf("got %+v", r)
	}
}

// TestPrometheusCredentials checks that the token or the basic credentials
// reach Prometheus, and that a URL carrying credentials is refused without
// printing them.
func TestPrometheusCredentials(t *testing.T) {
	t.Parallel()
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		_, _ = w.Write([]byte(vector("1")))
	}))
	defer srv.Close()
	check := &v1alpha1.PrometheusCheck{Query: "up", Op: "==", Threshold: 1}
	for _, cfg := range []PrometheusConfig{{URL: srv.URL, Token: "t0ken"}, {URL: srv.URL, Username: "u", Password: "p"}} {
		p, err := NewPrometheus(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r := p.Evaluate(context.Background(), check, time.Second); r.Verdict != v1alpha1.CheckPassed {
			t.Fatalf("%+v", r)
		}
	}
	if len(got) != 2 || got[0] != "Bearer t0ken" || got[1] != "Basic dTpw" {
		t.Fatalf("Authorization headers %q", got)
	}
	_, err := NewPrometheus(PrometheusConfig{URL: "https://admin:s3cret@prom.example"})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a URL with credentials: %v", err)
	}
	if _, err := NewPrometheus(PrometheusConfig{URL: srv.URL, Token: "a", Password: "b"}); err == nil {
		t.Fatal("token and password accepted together")
	}
}
