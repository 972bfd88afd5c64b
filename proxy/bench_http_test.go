package proxy

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/chain"
	"bailiff/engine"
)

// benchHTTPCalls makes b.N calls of tool through cs and reports the
// median and 99th-percentile latency of one call.
func benchHTTPCalls(b *testing.B, cs *mcp.ClientSession, tool string) {
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hello"}}
	for i := 0; i < 20; i++ { // warm up connections and the page cache
		if _, err := cs.CallTool(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		r, err := cs.CallTool(ctx, params)
		lat = append(lat, time.Since(t0))
		if err != nil || r.IsError {
			b.Fatalf("call: %v %v", err, r)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

func httpClient(b *testing.B, url, version string) *mcp.ClientSession {
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// BenchmarkHTTPDirect is the baseline: a Go SDK client calling the Go SDK
// test server over Streamable HTTP with nothing between them.
func BenchmarkHTTPDirect(b *testing.B) {
	url := httpSDKServer(b)
	cs := httpClient(b, url, "2025-11-25")
	defer cs.Close()
	benchHTTPCalls(b, cs, "echo")
}

// BenchmarkHTTPGateway is the same client and server with bailiff
// between them on both sides: gateway --listen in front, the server an
// HTTP upstream, the log written without fsync.
func BenchmarkHTTPGateway(b *testing.B) {
	url := httpSDKServer(b)
	pol, err := engine.Load("bench", []byte("version: 1\nrules:\n  - {id: echo, server: go, tool: echo, action: allow}\n"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	log, err := chain.Open(filepath.Join(dir, "audit.jsonl"), chain.None)
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	opt := Options{Policy: pol, Log: log, Evidence: chain.OpenEvidence(filepath.Join(dir, "audit.jsonl.evidence")),
		Server: "gateway", Session: "bench", Stderr: io.Discard}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeGatewayHTTP(ctx, opt, ln, []Upstream{{Name: "go", URL: url}}, HTTPOptions{}) }()
	cs := httpClient(b, "http://"+ln.Addr().String()+"/mcp", "2025-11-25")
	benchHTTPCalls(b, cs, "go.echo")
	cs.Close()
	cancel()
	<-done
}
