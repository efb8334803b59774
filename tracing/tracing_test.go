package tracing

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestConfigured(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"a traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"the SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{"no trace exporter", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER"} {
				t.Setenv(k, tc.env[k])
			}
			if got := Configured(); got != tc.want {
				t.Errorf("Configured() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSetupRefusesUnknownProtocol(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	if _, err := Setup(context.Background(), "throughline"); err == nil {
		t.Fatal("Setup accepted OTLP over http/json, which it cannot export")
	}
}

// TestSetupExports: with OTEL_EXPORTER_OTLP_ENDPOINT set, a span started
// in the trace of TRACEPARENT reaches the endpoint over OTLP/HTTP, with
// the caller's trace id and parent and service.name throughline. The
// endpoint is a loopback HTTP server that decodes the OTLP request with
// OpenTelemetry's own protobuf types (no collector runs here; the exporter
// is the real one).
func TestSetupExports(t *testing.T) {
	var mu sync.Mutex
	var got []*collectortrace.ExportTraceServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		req := &collectortrace.ExportTraceServiceRequest{}
		if err == nil && r.URL.Path == "/v1/traces" {
			err = proto.Unmarshal(body, req)
		}
		if err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("TRACEPARENT", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	ctx := FromEnvironment(context.Background())
	shutdown, err := Setup(ctx, "throughline")
	if err != nil {
		t.Fatal(err)
	}
	_, span := Start(ctx, "gate.promotion", App.String("checkout"))
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, req := range got {
		for _, rs := range req.GetResourceSpans() {
			service := ""
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					if s.GetName() != "gate.promotion" {
						continue
					}
					found = true
					if service != "throughline" || ss.GetScope().GetName() != Name {
						t.Errorf("service %q, scope %q", service, ss.GetScope().GetName())
					}
					if tid, pid := hexOf(s.GetTraceId()), hexOf(s.GetParentSpanId()); tid != "4bf92f3577b34da6a3ce929d0e0e4736" || pid != "00f067aa0ba902b7" {
						t.Errorf("trace %s parent %s: not the TRACEPARENT's", tid, pid)
					}
				}
			}
		}
	}
	if !found {
		t.Fatalf("no gate.promotion span exported (%d requests)", len(got))
	}
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }
