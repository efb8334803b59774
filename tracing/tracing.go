// Package tracing is throughline's OpenTelemetry tracing: the tracer every
// package starts its spans with, the W3C trace context taken from the
// environment (a CI job's or a controller's TRACEPARENT) or from a
// request's headers, and Setup, which exports spans over OTLP only when
// the standard OTEL_EXPORTER_OTLP_* variables configure an endpoint.
// Without Setup (or without an endpoint) every span is a no-op.
//
// Span attributes name apps, environments, revisions, digests, rules and
// outcomes; never a Secret value, a token or a request body.
package tracing

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of throughline's spans.
const Name = "github.com/throughline-dev/throughline"

// The attribute keys throughline's spans share.
const (
	App         = attribute.Key("throughline.app")
	Environment = attribute.Key("throughline.environment")
	PromotionID = attribute.Key("throughline.promotion_id")
	Digest      = attribute.Key("throughline.digest")
	Revision    = attribute.Key("throughline.revision")
	Result      = attribute.Key("throughline.result")
	Rules       = attribute.Key("throughline.rules")
)

// Start starts a span named name as a child of ctx's span.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return otel.Tracer(Name).Start(ctx, name, trace.WithAttributes(attrs...))
}

// End ends span, recording err (nil: OK) as its status.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// propagator is W3C trace context and baggage.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// FromRequest is ctx with the trace context of h (traceparent,
// tracestate), when it carries one: a delivery joins its sender's trace.
func FromRequest(ctx context.Context, h http.Header) context.Context {
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// FromEnvironment is ctx with the trace context of the process's
// environment (TRACEPARENT, TRACESTATE, BAGGAGE: OpenTelemetry's
// environment carriers), when it holds one: a CLI run by a traced job
// joins its trace.
func FromEnvironment(ctx context.Context) context.Context {
	c := propagation.MapCarrier{}
	for _, k := range []string{"traceparent", "tracestate", "baggage"} {
		if v := os.Getenv(strings.ToUpper(k)); v != "" {
			c[k] = v
		}
	}
	return propagator.Extract(ctx, c)
}

// TraceID is the trace id of ctx's span ("" when it has none): logs name
// it beside the record, so a log line finds its trace.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}

// Configured reports whether the environment configures an OTLP trace
// endpoint and does not turn tracing off (OTEL_SDK_DISABLED,
// OTEL_TRACES_EXPORTER=none).
func Configured() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || os.Getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs the trace context propagator and, when Configured, a
// tracer provider that batches spans to the OTLP endpoint of the standard
// variables (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _HEADERS, _PROTOCOL:
// grpc, or http/protobuf by default) with service.name service (unless
// OTEL_SERVICE_NAME says otherwise). shutdown flushes the spans; it is a
// no-op when tracing is off.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagator)
	if !Configured() {
		return func(context.Context) error { return nil }, nil
	}
	var exp sdktrace.SpanExporter
	proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch proto {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: want grpc or http/protobuf", proto)
	}
	if err != nil {
		return nil, fmt.Errorf("starting the OTLP trace exporter: %w", err)
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// over the default service name.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("the trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}
