package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/state"
	"bailiff/telemetry"
)

const benchPolicy = `version: 1
rules:
  - {id: echo, tool: echo, action: allow}
`

// benchCalls makes b.N echo calls through cs and reports the median and
// 90th-percentile latency of one call.
func benchCalls(b *testing.B, cs *mcp.ClientSession) {
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	for i := 0; i < 20; i++ { // warm up node's JIT and the page cache
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
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds()), "p90-µs")
}

func benchServer(b *testing.B) *exec.Cmd {
	if _, err := exec.LookPath("node"); err != nil {
		b.Skip("node is not installed")
	}
	script, _ := filepath.Abs("testdata/faulty-server.js")
	return exec.Command("node", script)
}

func connect(b *testing.B, t mcp.Transport) *mcp.ClientSession {
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(context.Background(), t, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// BenchmarkCallDirect is the baseline: the same client calling the same
// server with nothing between them.
func BenchmarkCallDirect(b *testing.B) {
	cmd := benchServer(b)
	cs := connect(b, &mcp.CommandTransport{Command: cmd})
	defer cs.Close()
	benchCalls(b, cs)
}

func benchProxy(b *testing.B, dur chain.Durability) { benchProxyWith(b, dur, benchPolicy) }

// benchTracer is the telemetry a traced gateway runs with: metrics and
// spans, exported to an OTLP receiver that keeps nothing.
type benchTracer struct{ *telemetry.Gateway }

func (t benchTracer) StartCall(tool, parent, state string) CallSpan {
	return t.Gateway.StartCall(tool, parent, state)
}

// telemetryHook, when set, gives benchProxyWith's gateway its telemetry.
var telemetryHook func(b *testing.B, opt *Options)

// benchTenantPolicy is benchPolicy with a tenant ceiling no bench reaches
// and a rate: every call then takes the counters' lock and saves them.
const benchTenantPolicy = benchPolicy + `tools:
  echo: {cost: 1, rate: 100000/s}
tenants:
  "*": {ceiling: 1000000000, window: 24h}
`

func benchProxyWith(b *testing.B, dur chain.Durability, policy string) {
	cmd := benchServer(b)
	pol, err := engine.Load("bench", []byte(policy))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	log, err := chain.Open(filepath.Join(dir, "audit.jsonl"), dur)
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	opt := Options{Policy: pol, Log: log, Evidence: chain.OpenEvidence(filepath.Join(dir, "audit.jsonl.evidence")),
		EvidenceSync: dur == chain.Sync, Server: "bench", Session: "bench", Stderr: io.Discard}
	if pol.HasLimits() {
		st, err := state.Open(filepath.Join(dir, "state.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		opt.Ledger = audit.NewStoredLedger(Counters{Store: st})
	}
	if telemetryHook != nil {
		telemetryHook(b, &opt)
	}
	clientR, proxyW := io.Pipe()
	proxyR, clientW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := Run(context.Background(), opt, proxyR, proxyW, cmd)
		proxyW.Close()
		done <- err
	}()
	cs := connect(b, &mcp.IOTransport{Reader: clientR, Writer: clientW})
	benchCalls(b, cs)
	cs.Close()
	<-done
}

// BenchmarkCallProxyNone goes through the proxy, its log written without
// fsync.
func BenchmarkCallProxyNone(b *testing.B) { benchProxy(b, chain.None) }

// BenchmarkCallProxySync goes through the proxy, every call record (and
// result) fsynced before the call goes on.
func BenchmarkCallProxySync(b *testing.B) { benchProxy(b, chain.Sync) }

// BenchmarkCallProxyTraced is BenchmarkCallProxyNone with every call
// traced (a span and its upstream child, sampled, exported over OTLP/HTTP
// to a receiver in the process) and counted in the metrics: what turning
// telemetry on adds.
func BenchmarkCallProxyTraced(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(sink.Close) // after the tracer's own cleanup has sent what it held
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
	telemetryHook = func(b *testing.B, opt *Options) {
		tr, err := telemetry.NewTracing(context.Background(), os.Getenv, "bench", io.Discard)
		if err != nil || tr == nil {
			b.Fatalf("tracing: %v", err)
		}
		b.Cleanup(func() { tr.Shutdown(context.Background()) })
		g := &telemetry.Gateway{Tracing: tr, Metrics: telemetry.New(telemetry.Options{})}
		opt.Telemetry = benchTracer{g}
		opt.Log = g.Log(opt.Log)
	}
	defer func() { telemetryHook = nil }()
	benchProxy(b, chain.None)
}

// BenchmarkCallProxyTenants is BenchmarkCallProxySync under a tenant
// ceiling and a rate kept in the state database.
func BenchmarkCallProxyTenants(b *testing.B) { benchProxyWith(b, chain.Sync, benchTenantPolicy) }
