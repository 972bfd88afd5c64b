package main

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"bailiff/chain"
)

// receiver is an OTLP/HTTP trace receiver: it keeps every span sent.
type receiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var msg coltracepb.ExportTraceServiceRequest
	if req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &msg) != nil {
		http.Error(w, "not a trace export", 400)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func attr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.GetStringValue()
		}
	}
	return ""
}

// headerTransport adds a traceparent header to every request.
type headerTransport struct{ traceparent string }

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("traceparent", h.traceparent)
	return http.DefaultTransport.RoundTrip(req)
}

// TestTraces: with an OTLP endpoint in the environment, each tools/call
// is a span with its verdict, check, rule and server (never its
// arguments), an allowed call's round trip a child span of it; a caller's
// traceparent, in _meta or as an HTTP header, is continued; and each
// call's record holds its span's trace id.
func TestTraces(t *testing.T) {
	dir := t.TempDir()
	config, audit := meteredConfig(t, dir, `version: 1
rules:
  - {id: echo, server: go, tool: echo, action: allow}
  - {id: no-send, server: go, tool: send, action: deny}
  - {id: grow, server: go, tool: grow, action: ask}
  - {id: no-ask, server: go, tool: ask, action: deny}
`)
	rcv := &receiver{}
	collector := httptest.NewServer(rcv)
	defer collector.Close()
	found, said, stop := startGateway(t, config, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL, "OTEL_BSP_SCHEDULE_DELAY=50"}, nil, "serving Streamable HTTP at ")
	url := found["serving Streamable HTTP at "]
	if !strings.Contains(strings.Join(said, "\n"), "tracing each tools/call to "+collector.URL+"/v1/traces") {
		t.Fatalf("gateway said:\n%s", strings.Join(said, "\n"))
	}

	const (
		metaTrace      = "0af7651916cd43dd8448eb211c80319c"
		metaSpan       = "b7ad6b7169203331"
		headerTrace    = "4bf92f3577b34da6a3ce929d0e0e4736"
		headerSpan     = "00f067aa0ba902b7"
		statelessTrace = "5a2bd3e9a1c04c1f9d3b7e6f0a1b2c3d"
		statelessSpan  = "1f2e3d4c5b6a7988"
		secret         = "secret-argument-text"
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := connect(t, ctx, url)
	call := func(cs *mcp.ClientSession, name string, meta mcp.Meta) {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": secret}, Meta: meta}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	call(cs, "go.echo", mcp.Meta{"traceparent": "00-" + metaTrace + "-" + metaSpan + "-01"})
	call(cs, "go.grow", nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "traced", Version: "0"}, nil)
	hs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: headerTransport{"00-" + headerTrace + "-" + headerSpan + "-01"}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	call(hs, "go.send", nil)
	// A stateless client (2026-07-28) with the header: its requests take
	// the SDK's stateless handler.
	sl, err := mcp.NewClient(&mcp.Implementation{Name: "stateless", Version: "0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: headerTransport{"00-" + statelessTrace + "-" + statelessSpan + "-01"}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	call(sl, "go.ask", nil)
	cs.Close()
	hs.Close()
	sl.Close()
	stop() // the spans still held are sent on the way out

	byName := map[string]*tracepb.Span{}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, s := range rcv.spans {
		byName[s.Name] = s
		for _, a := range s.Attributes {
			if strings.Contains(a.Value.String(), secret) {
				t.Errorf("span %s carries the call's arguments in %s", s.Name, a.Key)
			}
		}
	}
	echo, grow, send, up, ask := byName["tools/call go.echo"], byName["tools/call go.grow"], byName["tools/call go.send"], byName["upstream tools/call go.echo"], byName["tools/call go.ask"]
	if echo == nil || grow == nil || send == nil || up == nil || ask == nil || len(rcv.spans) != 5 {
		t.Fatalf("spans received: %v", rcv.spans)
	}
	for s, want := range map[*tracepb.Span][3]string{echo: {"allow", "rules", "echo"}, grow: {"ask", "rules", "grow"}, send: {"deny", "rules", "no-send"}} {
		if got := [3]string{attr(s, "bailiff.verdict"), attr(s, "bailiff.check"), attr(s, "bailiff.rule")}; got != want || attr(s, "bailiff.server") != "go" || s.Kind != tracepb.Span_SPAN_KIND_SERVER {
			t.Errorf("%s: verdict, check, rule %v, server %q, kind %v; want %v", s.Name, got, attr(s, "bailiff.server"), s.Kind, want)
		}
	}
	hexOf := func(b []byte) string { return hex.EncodeToString(b) }
	if hexOf(echo.TraceId) != metaTrace || hexOf(echo.ParentSpanId) != metaSpan {
		t.Errorf("a call with a traceparent in _meta: trace %x parent %x, want %s %s", echo.TraceId, echo.ParentSpanId, metaTrace, metaSpan)
	}
	if hexOf(send.TraceId) != headerTrace || hexOf(send.ParentSpanId) != headerSpan {
		t.Errorf("a call with a traceparent header: trace %x parent %x, want %s %s", send.TraceId, send.ParentSpanId, headerTrace, headerSpan)
	}
	if hexOf(ask.TraceId) != statelessTrace || hexOf(ask.ParentSpanId) != statelessSpan || attr(ask, "bailiff.verdict") != "deny" {
		t.Errorf("a stateless call with a traceparent header: trace %x parent %x verdict %q", ask.TraceId, ask.ParentSpanId, attr(ask, "bailiff.verdict"))
	}
	if len(grow.ParentSpanId) != 0 || hexOf(grow.TraceId) == metaTrace || hexOf(grow.TraceId) == headerTrace {
		t.Errorf("a call with no trace context continues one: parent %x", grow.ParentSpanId)
	}
	if hexOf(up.TraceId) != metaTrace || hexOf(up.ParentSpanId) != hexOf(echo.SpanId) || up.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("the upstream span is not the echo span's child: trace %x parent %x kind %v", up.TraceId, up.ParentSpanId, up.Kind)
	}
	traces := map[string]string{}
	for _, rec := range records(t, audit) {
		if rec.Kind == chain.KindCall {
			traces[field(rec.Body, "tool")] = field(rec.Body, "trace")
		}
	}
	if traces["echo"] != metaTrace || traces["send"] != headerTrace || traces["grow"] != hexOf(grow.TraceId) {
		t.Errorf("the records' trace ids %v, want echo %s, send %s, grow %x", traces, metaTrace, headerTrace, grow.TraceId)
	}
	var out strings.Builder
	if code := run([]string{"verify", audit}, nil, &out, &out); code != 0 {
		t.Errorf("verify of a traced log: %d\n%s", code, out.String())
	}
}
