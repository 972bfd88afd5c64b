package proxy

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/chain"
	"bailiff/engine"
	"bailiff/verify"
)

// listening is a gateway served on Streamable HTTP on a loopback port.
type listening struct {
	url  string
	log  string
	ev   chain.Evidence
	stop func()
}

func startListening(t *testing.T, policy string, ups []Upstream, hopt HTTPOptions, edit ...func(o *Options, log string)) *listening {
	t.Helper()
	return startServing(t, policy, func(ctx context.Context, opt Options, ln net.Listener) error {
		return ServeGatewayHTTP(ctx, opt, ln, ups, hopt)
	}, edit...)
}

// startServing serves on a loopback port with serve, under policy, into
// an audit log of its own.
func startServing(t *testing.T, policy string, serve func(context.Context, Options, net.Listener) error, edit ...func(o *Options, log string)) *listening {
	t.Helper()
	pol, err := engine.Load("test policy", []byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := chain.Open(logPath, chain.Sync)
	if err != nil {
		t.Fatal(err)
	}
	ev := chain.OpenEvidence(chain.EvidenceDir(logPath))
	opt := Options{Policy: pol, Log: w, Evidence: ev, Server: "gateway", Session: "test-session",
		Principal: engine.Principal{Subject: "ana"}, Secret: []byte("0123456789abcdef0123456789abcdef"),
		Stderr: &lockedBuffer{}, CallTimeout: 30 * time.Second, AskTimeout: 30 * time.Second}
	for _, e := range edit {
		e(&opt, logPath)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, opt, ln)
		w.Close()
	}()
	l := &listening{url: "http://" + ln.Addr().String() + "/mcp", log: logPath, ev: ev}
	stopped := false
	l.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gateway: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("the gateway did not stop")
		}
	}
	t.Cleanup(l.stop)
	return l
}

func (l *listening) connect(t *testing.T, version string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: l.url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect over HTTP at %s: %v", version, err)
	}
	return cs
}

// verify stops the gateway and reads its log back: sessions sessions
// (one per client that listed or called tools), clean.
func (l *listening) verify(t *testing.T, sessions int) *verify.Report {
	t.Helper()
	l.stop()
	if sessions == 0 {
		if b, err := os.ReadFile(l.log); err != nil || len(b) != 0 {
			t.Errorf("the log holds %d bytes (%v), want none: no client called a tool", len(b), err)
		}
		return &verify.Report{}
	}
	rep := verifyClean(t, l.log, l.ev)
	if rep.Sessions != sessions {
		t.Errorf("the log holds %d sessions, want %d", rep.Sessions, sessions)
	}
	return rep
}

// TestListenGoSDK: Go SDK clients over Streamable HTTP, one at
// 2026-07-28 (stateless) and one capped at 2025-11-25 (a session), both
// served by one gateway: the allowed call is answered, the denied one
// refused naming its rule and never run, and the log verifies.
func TestListenGoSDK(t *testing.T) {
	bin := sdkServer(t)
	ran := filepath.Join(t.TempDir(), "ran")
	l := startListening(t, gatewaySDKPolicy, []Upstream{{Name: "go", Cmd: exec.Command(bin, "-ran", ran)}}, HTTPOptions{})
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			cs := l.connect(t, version)
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Errorf("negotiated %s, want %s", got, version)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "go.echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || r.IsError || text(r) != "echo: hi" {
				t.Fatalf("go.echo: %v %+v", err, r)
			}
			r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "go.send", Arguments: map[string]any{"text": "secret"}})
			if err != nil || !r.IsError || !strings.Contains(text(r), "rule no-send") {
				t.Fatalf("go.send: %v %+v, want a refusal naming rule no-send", err, r)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			if got := strings.Join(names, ","); got != "go.echo,go.ask" && got != "go.ask,go.echo" {
				t.Errorf("tools/list: %v, want go.echo and go.ask only", names)
			}
		})
	}
	rep := l.verify(t, 2)
	if rep.Calls != 4 {
		t.Errorf("the log holds %d calls, want 4", rep.Calls)
	}
	if b, err := os.ReadFile(ran); err == nil {
		t.Errorf("a denied call reached the server: %q", b)
	}
}

// TestListenRefuses: a request from a page elsewhere (Origin), one
// naming another host (DNS rebinding) and one too large are refused
// before any MCP is read.
func TestListenRefuses(t *testing.T) {
	bin := sdkServer(t)
	l := startListening(t, gatewaySDKPolicy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}}, HTTPOptions{MaxRequestBytes: 1 << 10})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	post := func(body string, edit func(*http.Request)) int {
		req, err := http.NewRequest("POST", l.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if edit != nil {
			edit(req)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post(init, nil); got != http.StatusOK {
		t.Fatalf("a plain initialize: %d, want 200", got)
	}
	if got := post(init, func(r *http.Request) { r.Header.Set("Origin", "http://127.0.0.1:3000") }); got != http.StatusOK {
		t.Errorf("a loopback Origin: %d, want 200", got)
	}
	for name, edit := range map[string]func(*http.Request){
		"foreign Origin":     func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") },
		"null Origin":        func(r *http.Request) { r.Header.Set("Origin", "null") },
		"foreign Host":       func(r *http.Request) { r.Host = "evil.example" },
		"foreign Host, 2026": func(r *http.Request) { r.Host = "evil.example"; r.Header.Set("Mcp-Protocol-Version", "2026-07-28") },
	} {
		if got := post(init, edit); got != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, got)
		}
	}
	big := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"go.echo","arguments":{"text":"` + string(bytes.Repeat([]byte("x"), 2<<10)) + `"}}}`
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		if got := post(big, func(r *http.Request) { r.Header.Set("Mcp-Protocol-Version", v) }); got != http.StatusRequestEntityTooLarge {
			t.Errorf("an oversized body at %s: %d, want 413", v, got)
		}
	}
	// The two sessions admitted started their servers (a session's
	// servers start with it) and called nothing.
	rep := l.verify(t, 2)
	if rep.Calls != 0 {
		t.Errorf("the log holds %d calls, want none", rep.Calls)
	}
}

// TestListenAskOutOfBand: an HTTP client that did not declare
// elicitation, at either revision, is not asked in band: the ask is
// refused at once with a pending approval.
func TestListenAskOutOfBand(t *testing.T) {
	bin := sdkServer(t)
	policy := `version: 1
rules:
  - {id: ask-echo, server: go, tool: echo, action: ask}
`
	var approvals *Approvals
	_, leePub := approverKey(t, "lee")
	l := startListening(t, policy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}}, HTTPOptions{}, func(o *Options, log string) {
		approvals = testApprovals(t, log)
		o.Approvals = approvals
		o.ApproverKeys = []string{leePub}
	})
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		cs := l.connect(t, version)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "go.echo", Arguments: map[string]any{"text": version}})
		cancel()
		if err != nil || !r.IsError || !strings.Contains(text(r), "bailiff approve") {
			t.Fatalf("go.echo at %s: %v %+v, want a refusal naming a pending approval", version, err, r)
		}
		cs.Close()
	}
	if list, err := approvals.List(); err != nil || len(list) != 2 {
		t.Errorf("pending approvals: %v %v, want two", list, err)
	}
	l.verify(t, 2)
}
