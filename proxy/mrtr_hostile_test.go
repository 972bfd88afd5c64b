//lint:file-ignore SA1019 the sampling handler shows that a server's sampling request never reaches the client

package proxy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/engine"
)

// TestUpstreamInputRequestsFailClosed: a server's result carrying
// inputRequests, with resultType complete or absent, is no tool result.
// Relayed, the Go SDK client would run the server's sampling request
// (text bailiff never saw, so nothing it names is tainted) and retry the
// call, which bailiff would forward again: one call run many times.
func TestUpstreamInputRequestsFailClosed(t *testing.T) {
	needNode(t)
	script, _ := filepath.Abs("testdata/hostile-mrtr-server.js")
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		for _, rt := range []string{"", "complete"} {
			t.Run(v+"/resultType="+rt, func(t *testing.T) {
				ran := filepath.Join(t.TempDir(), "ran")
				var mu sync.Mutex
				var prompts []string
				env := []string{"ADV_RAN=" + ran}
				if rt != "" {
					env = append(env, "ADV_RT="+rt)
				}
				s := start(t, setup{policy: hostilePolicy, server: "mail", subject: "ana", command: []string{"node", script}, version: v, env: env,
					client: func(o *mcp.ClientOptions) {
						o.CreateMessageHandler = func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
							mu.Lock()
							defer mu.Unlock()
							prompts = append(prompts, "sampling")
							return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "ok"}}, nil
						}
					}})
				res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{}})
				if err == nil && (res == nil || !res.IsError || !strings.Contains(text(res), "carries inputRequests")) {
					t.Errorf("the call was not refused for its inputRequests: %v", res)
				}
				s.close()
				b, _ := os.ReadFile(ran)
				if n := strings.Count(string(b), `"name":"weather"`); n != 1 {
					t.Errorf("weather ran %d times for one client call:\n%s", n, b)
				}
				mu.Lock()
				if len(prompts) != 0 {
					t.Errorf("the client ran the server's own requests: %v", prompts)
				}
				mu.Unlock()
				if rep := s.verify(); len(rep.Findings) != 0 {
					t.Errorf("verify: %v", rep.Findings)
				}
			})
		}
	}
}

// TestListenNoPhishing: an upstream's elicitation dressed as bailiff's
// own ask never reaches the human of a gateway --listen client.
func TestListenNoPhishing(t *testing.T) {
	needNode(t)
	script, _ := filepath.Abs("testdata/hostile-mrtr-server.js")
	ran := filepath.Join(t.TempDir(), "ran")
	cmd := exec.Command("node", script)
	cmd.Env = append(os.Environ(), "ADV_RAN="+ran, "ADV_MODE=phish")
	l := startListening(t, hostilePolicy, []Upstream{{Name: "mail", Cmd: cmd}}, HTTPOptions{})
	var shown []string
	opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		shown = append(shown, r.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "0"}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: l.url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mail.weather", Arguments: map[string]any{}})
	cs.Close()
	l.stop()
	if len(shown) != 0 {
		t.Errorf("the human was shown the server's text as an ask: %q", shown)
	}
	b, _ := os.ReadFile(ran)
	if n := strings.Count(string(b), `"name":"weather"`); n != 1 {
		t.Errorf("weather ran %d times for one client call", n)
	}
	if rep := l.verify(t, 1); len(rep.Findings) != 0 {
		t.Errorf("verify: %v", rep.Findings)
	}
}

// TestNoSwitchToStateless: a session that began with initialize, whose
// client declared no elicitation, cannot turn stateless with one request
// that claims elicitation, and so approve its own ask.
func TestNoSwitchToStateless(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	rs := startRawWith(t, false, askPolicy, "-ran", ran)
	rs.roundTrip(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "x", "version": "1"}})
	rs.w.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	m := rs.roundTrip(3, "tools/call", map[string]any{"name": "send", "arguments": map[string]any{"text": "a"}, "_meta": askMeta()})
	e, _ := m["error"].(map[string]any)
	if e == nil || e["code"] != float64(-32602) || !strings.Contains(e["message"].(string), "cannot switch it to the stateless revision") {
		t.Errorf("a handshake session switched revision: %v", m)
	}
	rs.close()
	if b, _ := os.ReadFile(ran); len(b) != 0 { // send appends its text when it runs
		t.Errorf("send ran: %q", b)
	}
}

// needNode skips a test whose server is a node script when node is
// missing, except in CI, where that is a failure.
func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("BAILIFF_PEERS_REQUIRED") != "" {
			t.Fatal("node is not installed")
		}
		t.Skip("node is not installed")
	}
}

// TestAsksNeverRetriedAreDropped: asks a client never answers, and the
// nonces of spent states, go once their states expire, so a client that
// asks without end cannot grow the gateway; an expired state is still
// refused as expired, not passed as unknown.
func TestAsksNeverRetriedAreDropped(t *testing.T) {
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	p := stateProxy(&now)
	c := &engine.Call{ID: "c1", ToolRef: engine.ToolRef{Server: "go", Tool: "send"}, Digest: "sha256:aa"}
	first := p.issueState(c, engine.Decision{Verdict: engine.Ask})
	spent := p.issueState(c, engine.Decision{Verdict: engine.Ask})
	if _, err := p.takeState(spent, c); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		p.issueState(c, engine.Decision{Verdict: engine.Ask})
	}
	now = now.Add(time.Hour)
	p.issueState(c, engine.Decision{Verdict: engine.Ask})
	if len(p.asks) != 1 || len(p.usedNonces) != 0 {
		t.Errorf("after expiry %d asks and %d nonces are kept, want 1 and 0", len(p.asks), len(p.usedNonces))
	}
	for _, st := range []string{first, spent} {
		if _, err := p.takeState(st, c); err == nil || err.(*stateError).Kind != "expired" {
			t.Errorf("a dropped, expired state: %v, want expired", err)
		}
	}
}

// TestRefusalSentences: a policy author's reason without a full stop does
// not run on into the sentence after it.
func TestRefusalSentences(t *testing.T) {
	for in, want := range map[string]string{"sums need a human": "sums need a human.", "ask first.": "ask first.", "why?": "why?", "": ""} {
		if got := sentence(in); got != want {
			t.Errorf("sentence(%q) = %q, want %q", in, got, want)
		}
	}
}
