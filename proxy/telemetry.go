package proxy

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"bailiff/engine"
)

// Telemetry is told what the gateway did; it changes nothing. Its label
// values are its own to bound: every name here may come from a client
// or a server.
type Telemetry interface {
	// Decided is a recorded decision of a tools/call; pinned is false
	// when the pinning check refused it (the tool is none the session
	// pinned).
	Decided(server, tool string, pinned bool, verdict, check string)
	// Added is what bailiff added to a call decided without a human:
	// all its time but the upstream's round trip.
	Added(server, verdict string, d time.Duration)
	// Upstream is a forwarded call's round trip; answered is false when
	// no answer came.
	Upstream(server string, answered bool, d time.Duration)
}

type noTelemetry struct{}

func (noTelemetry) Decided(string, string, bool, string, string) {}
func (noTelemetry) Added(string, string, time.Duration)          {}
func (noTelemetry) Upstream(string, bool, time.Duration)         {}

func (p *Proxy) telemetry() Telemetry {
	if p.opt.Telemetry == nil {
		return noTelemetry{}
	}
	return p.opt.Telemetry
}

// Tracer opens the trace span of each tools/call; a Telemetry that is
// one traces.
type Tracer interface {
	// StartCall opens the span of a call of tool, continuing the caller's
	// W3C trace context (traceparent, tracestate) when it names one.
	StartCall(tool, traceparent, tracestate string) CallSpan
}

// CallSpan is one call's span.
type CallSpan interface {
	// TraceID is the span's trace id in hex, for the call's record; ""
	// when the call is not traced.
	TraceID() string
	Decided(server, verdict, check, rule string)
	// Upstream opens the span of the round trip to the server: the trace
	// context the server is given, and what ends it.
	Upstream(server string) (traceparent, tracestate string, end func(answered bool))
	End()
}

type noSpan struct{}

func (noSpan) TraceID() string                        { return "" }
func (noSpan) Decided(string, string, string, string) {}
func (noSpan) Upstream(string) (string, string, func(bool)) {
	return "", "", func(bool) {}
}
func (noSpan) End() {}

// startSpan opens the span of a call of tool, under the trace context
// its request carried: in its _meta (MCP 2026-07-28), or else in its
// HTTP request's headers. The context returned carries it to forward.
func (p *Proxy) startSpan(ctx context.Context, id jsonrpc.ID, tool string, meta any) (context.Context, CallSpan) {
	t, ok := p.opt.Telemetry.(Tracer)
	if !ok {
		return ctx, noSpan{}
	}
	m, _ := meta.(map[string]any)
	parent, _ := m["traceparent"].(string)
	state, _ := m["tracestate"].(string)
	if parent == "" {
		if h, ok := p.down.(traceHeaders); ok {
			parent, state = h.traceHeaders(id)
		}
	}
	span := t.StartCall(tool, parent, state)
	return context.WithValue(ctx, spanKey{}, span), span
}

// told tells the telemetry and the call's span a recorded decision.
func (p *Proxy) told(span CallSpan, c *engine.Call, d engine.Decision) {
	p.telemetry().Decided(c.Server, c.Tool, d.Check != engine.CheckPinning, string(d.Verdict), string(d.Check))
	span.Decided(c.Server, string(d.Verdict), string(d.Check), d.Rule)
}

// traceHeaders is a client stream that knows the trace context of the
// HTTP request that carried each call.
type traceHeaders interface {
	traceHeaders(id jsonrpc.ID) (traceparent, tracestate string)
}

type spanKey struct{}

func spanOf(ctx context.Context) CallSpan {
	if s, ok := ctx.Value(spanKey{}).(CallSpan); ok {
		return s
	}
	return noSpan{}
}

// tracedMeta is the _meta forwarded upstream: the client's, with the
// trace context of the upstream span in place of any it carried, so the
// server's spans hang under bailiff's.
func tracedMeta(meta any, parent, state string) any {
	if parent == "" {
		return meta
	}
	out := map[string]any{}
	if m, ok := meta.(map[string]any); ok {
		for k, v := range m {
			out[k] = v
		}
	}
	out["traceparent"] = parent
	delete(out, "tracestate")
	if state != "" {
		out["tracestate"] = state
	}
	return out
}
