package telemetry

import (
	"time"

	"bailiff/audit"
)

// Gateway is what a gateway tells: metrics, traces, either or both
// (nil for none).
type Gateway struct {
	Metrics *Metrics
	Tracing *Tracing
}

func (g *Gateway) Decided(server, tool string, pinned bool, verdict, check string) {
	if g.Metrics != nil {
		g.Metrics.Decided(server, tool, pinned, verdict, check)
	}
}

func (g *Gateway) Added(server, verdict string, d time.Duration) {
	if g.Metrics != nil {
		g.Metrics.Added(server, verdict, d)
	}
}

func (g *Gateway) Upstream(server string, answered bool, d time.Duration) {
	if g.Metrics != nil {
		g.Metrics.Upstream(server, answered, d)
	}
}

// Span is the trace span of one call: a span of its own, or nothing.
type Span interface {
	TraceID() string
	Decided(server, verdict, check, rule string)
	Upstream(server string) (traceparent, tracestate string, end func(answered bool))
	End()
}

// StartCall opens the span of one tools/call of tool, continuing the
// caller's W3C trace context when parent names one (an invalid one is
// ignored: the span starts a trace of its own).
func (g *Gateway) StartCall(tool, parent, state string) Span {
	if g.Tracing == nil {
		return noSpan{}
	}
	return g.Tracing.start(tool, parent, state)
}

// Log is l as the metrics time it (l itself without metrics).
func (g *Gateway) Log(l audit.Log) audit.Log {
	if g.Metrics == nil {
		return l
	}
	return g.Metrics.Log(l)
}

type noSpan struct{}

func (noSpan) TraceID() string                        { return "" }
func (noSpan) Decided(string, string, string, string) {}
func (noSpan) Upstream(string) (string, string, func(bool)) {
	return "", "", func(bool) {}
}
func (noSpan) End() {}
