// Package spantest records the spans a test's code starts, with the
// OpenTelemetry SDK's own in-memory recorder (a real OTLP exporter would
// need a collector, which the tests do not run). For tests only.
package spantest

import (
	"context"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

var (
	once     sync.Once
	recorder *tracetest.SpanRecorder
)

// install makes a recording tracer provider the global one, once per test
// binary (parallel tests share it; Root and Of keep each test's spans apart
// by trace).
func install() {
	once.Do(func() {
		recorder = tracetest.NewSpanRecorder()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder)))
	})
}

// Root starts a root span for t, ended when t ends, and returns its
// context and trace id: what the code under test starts from ctx is in
// that trace.
func Root(t testing.TB) (context.Context, string) {
	t.Helper()
	install()
	ctx, span := otel.Tracer("spantest").Start(t.Context(), t.Name(), trace.WithNewRoot())
	t.Cleanup(func() { span.End() })
	return ctx, span.SpanContext().TraceID().String()
}

// Install records spans from now on, for tests whose spans start from a
// context they do not hold (a request's headers).
func Install() { install() }

// Of are the ended spans of trace, in the order they ended.
func Of(trace string) []sdktrace.ReadOnlySpan {
	install()
	var out []sdktrace.ReadOnlySpan
	for _, s := range recorder.Ended() {
		if s.SpanContext().TraceID().String() == trace {
			out = append(out, s)
		}
	}
	return out
}

// All are every ended span recorded.
func All() []sdktrace.ReadOnlySpan {
	install()
	return recorder.Ended()
}

// Attributes are s's attributes, by key, as strings.
func Attributes(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes() {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}
