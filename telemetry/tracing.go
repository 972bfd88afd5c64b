package telemetry

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
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
	// Endpoint is where the spans go.
	Endpoint string
}

// NewTracing configures tracing from the standard OTEL_* variables, read
// through getenv (export failures are said on warn, at most once a
// minute): nil when they ask for none (no OTLP endpoint and no
// OTEL_TRACES_EXPORTER=otlp, or OTEL_SDK_DISABLED=true, or
// OTEL_TRACES_EXPORTER=none); an error for a setting bailiff cannot
// honour, rather than traces silently lost.
func NewTracing(ctx context.Context, getenv func(string) string, version string, warn io.Writer) (*Tracing, error) {
	exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	switch {
	case strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true"), exporter == "none":
		return nil, nil
	case exporter != "" && exporter != "otlp":
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: bailiff exports traces over OTLP only (otlp, or none)", exporter)
	case exporter == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "":
		return nil, nil
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if proto := getenv(name); proto != "" {
			if proto != "http/protobuf" {
				return nil, fmt.Errorf("%s=%s: bailiff sends OTLP over HTTP only: set %s=http/protobuf, and the endpoint to the collector's HTTP port (4318)", name, proto, name)
			}
			break // the traces' own setting wins
		}
	}
	endpoint, err := traceEndpoint(getenv)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE"} {
		if f := getenv(name); f != "" {
			if _, err := os.ReadFile(f); err != nil {
				return nil, fmt.Errorf("%s: %v", name, err)
			}
		}
	}
	// The rest (headers, timeout, TLS files) from OTEL_EXPORTER_OTLP_*.
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("the OTLP trace exporter: %v", err)
	}
	version, _, _ = strings.Cut(version, "\n")
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName("bailiff"), semconv.ServiceVersion(version)), resource.Environment())
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %v", err)
	}
	otel.SetErrorHandler(&warner{w: warn})
	// The batcher drops spans when its queue is full: a slow or absent
	// collector never holds a call up.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{tp: tp, tracer: tp.Tracer("bailiff"), Endpoint: endpoint}, nil
}

// traceEndpoint is the URL spans are posted to, as the OTLP specification
// reads the variables: the traces' own endpoint as given, else the
// general one with /v1/traces, else http://localhost:4318/v1/traces. One
// that is not an http or https URL is refused: the exporter would only
// fail at each batch.
func traceEndpoint(getenv func(string) string) (string, error) {
	name, raw := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if raw == "" {
		name, raw = "OTEL_EXPORTER_OTLP_ENDPOINT", getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		if raw == "" {
			return "http://localhost:4318/v1/traces", nil
		}
		raw = strings.TrimSuffix(raw, "/") + "/v1/traces"
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s=%s is not an http:// or https:// URL (a collector's OTLP/HTTP port is http://HOST:4318)", name, getenv(name))
	}
	return raw, nil
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
	if len(tool) > maxLabel {
		tool = tool[:maxLabel] // a name the caller chose: a span name stays short
	}
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

// warner says OpenTelemetry's errors (a collector that cannot be
// reached) on the gateway's stderr, at most once a minute, with how many
// were not said.
type warner struct {
	w      io.Writer
	mu     sync.Mutex
	last   time.Time
	hidden int
}

func (h *warner) Handle(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w == nil {
		return
	}
	if now := time.Now(); now.Sub(h.last) >= time.Minute {
		more := ""
		if h.hidden > 0 {
			more = fmt.Sprintf(" (and %d more since the last warning)", h.hidden)
		}
		fmt.Fprintf(h.w, "bailiff: warning: traces: %v%s\n", err, more)
		h.last, h.hidden = now, 0
		return
	}
	h.hidden++
}
