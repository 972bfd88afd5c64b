package telemetry

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Tracing is a gateway's OpenTelemetry traces: one span per tools/call,
// a child span per round trip upstream, exported over OTLP/HTTP.
type Tracing struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
}

// NewTracing configures tracing from the standard OTEL_* variables, read
// through getenv: nil when they ask for none (no OTLP endpoint and no
// OTEL_TRACES_EXPORTER=otlp, or OTEL_SDK_DISABLED=true, or
// OTEL_TRACES_EXPORTER=none); an error for a setting bailiff cannot
// honour, rather than traces silently lost.
func NewTracing(ctx context.Context, getenv func(string) string, version string) (*Tracing, error) {
	exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	switch {
	case strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true"), exporter == "none":
		return nil, nil
	case exporter != "" && exporter != "otlp":
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: bailiff exports traces over OTLP only (otlp, or none)", exporter)
	case exporter == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "":
		return nil, nil
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: bailiff sends OTLP over HTTP (http/protobuf): set it so, and the endpoint to the collector's HTTP port (4318)", proto)
	}
	exp, err := otlptracehttp.New(ctx) // the endpoint, headers and TLS from OTEL_EXPORTER_OTLP_*
	if err != nil {
		return nil, fmt.Errorf("the OTLP trace exporter: %v", err)
	}
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName("bailiff"), semconv.ServiceVersion(version)), resource.Environment())
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %v", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{tp: tp, tracer: tp.Tracer("bailiff")}, nil
}

// Shutdown sends the spans still held and stops.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }

// carrier is a W3C trace context as two strings.
type carrier struct{ parent, state string }

func (c *carrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.parent
	case "tracestate":
		return c.state
	}
	return ""
}

func (c *carrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.parent = value
	case "tracestate":
		c.state = value
	}
}

func (c *carrier) Keys() []string { return []string{"traceparent", "tracestate"} }

var w3c = propagation.TraceContext{}

// callSpan is the span of one tools/call.
type callSpan struct {
	t    *Tracing
	ctx  context.Context
	span trace.Span
	tool string
}

func (t *Tracing) start(tool, parent, state string) *callSpan {
	ctx := w3c.Extract(context.Background(), &carrier{parent, state})
	ctx, span := t.tracer.Start(ctx, "tools/call "+tool, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", tool),
			attribute.String("gen_ai.operation.name", "execute_tool")))
	return &callSpan{t: t, ctx: ctx, span: span, tool: tool}
}

func (s *callSpan) TraceID() string {
	sc := s.span.SpanContext()
	if !sc.IsSampled() {
		return "" // not exported: a record must not point at a trace no one has
	}
	id := sc.TraceID()
	return hex.EncodeToString(id[:])
}

func (s *callSpan) Decided(server, verdict, check, rule string) {
	s.span.SetAttributes(attribute.String("bailiff.server", server), attribute.String("bailiff.verdict", verdict),
		attribute.String("bailiff.check", check), attribute.String("bailiff.rule", rule))
}

func (s *callSpan) Upstream(server string) (string, string, func(answered bool)) {
	_, span := s.t.tracer.Start(s.ctx, "upstream tools/call "+s.tool, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("bailiff.server", server), attribute.String("gen_ai.tool.name", s.tool)))
	var c carrier
	w3c.Inject(trace.ContextWithSpan(s.ctx, span), &c)
	return c.parent, c.state, func(answered bool) {
		if !answered {
			span.SetStatus(codes.Error, "the server did not answer")
		}
		span.End()
	}
}

func (s *callSpan) End() { s.span.End() }
