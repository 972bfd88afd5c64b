package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/chain"
	"bailiff/engine"
)

// benchLoad makes b.N calls of tool spread over clients sessions of
// their own, all at once, and reports the median and 99th-percentile
// latency of one call and the calls per second.
func benchLoad(b *testing.B, url, tool string, clients int) {
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hello"}}
	css := make([]*mcp.ClientSession, clients)
	for i := range css {
		css[i] = httpClient(b, url, "2025-11-25")
		defer css[i].Close()
		for range 3 { // warm up the connection
			if _, err := css[i].CallTool(ctx, params); err != nil {
				b.Fatal(err)
			}
		}
	}
	per := max(b.N/clients, 1)
	lats := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, cs := range css {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range per {
				t0 := time.Now()
				r, err := cs.CallTool(ctx, params)
				lats[i] = append(lats[i], time.Since(t0))
				if err != nil || r.IsError {
					b.Errorf("call: %v %v", err, r)
					return
				}
			}
		}()
	}
	b.ResetTimer()
	t0 := time.Now()
	close(start)
	wg.Wait()
	took := time.Since(t0)
	b.StopTimer()
	lat := slices.Concat(lats...)
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(lat))/took.Seconds(), "calls/s")
}

// BenchmarkHTTPLoad is many clients at once, each its own session, on
// the Go SDK test server over Streamable HTTP: straight to it, and through
// gateway --listen with the log and the evidence fsynced (durability
// sync, the default), so what one fsync per call costs under load shows.
func BenchmarkHTTPLoad(b *testing.B) {
	for _, clients := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("direct/clients=%d", clients), func(b *testing.B) {
			benchLoad(b, httpSDKServer(b), "echo", clients)
		})
		b.Run(fmt.Sprintf("gateway-sync/clients=%d", clients), func(b *testing.B) {
			url := httpSDKServer(b)
			pol, err := engine.Load("bench", []byte("version: 1\nrules:\n  - {id: echo, server: go, tool: echo, action: allow}\n"))
			if err != nil {
				b.Fatal(err)
			}
			dir := b.TempDir()
			log, err := chain.Open(filepath.Join(dir, "audit.jsonl"), chain.Sync)
			if err != nil {
				b.Fatal(err)
			}
			defer log.Close()
			opt := Options{Policy: pol, Log: log, Evidence: chain.OpenEvidence(filepath.Join(dir, "audit.jsonl.evidence")),
				EvidenceSync: true, Server: "gateway", Session: "bench", Stderr: io.Discard}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			// Every client is on one address here: no bound on opening
			// sessions from it.
			hopt := HTTPOptions{NoInitRate: true}
			go func() { done <- ServeGatewayHTTP(ctx, opt, ln, []Upstream{{Name: "go", URL: url}}, hopt) }()
			benchLoad(b, "http://"+ln.Addr().String()+"/mcp", "go.echo", clients)
			cancel()
			<-done
		})
	}
}
