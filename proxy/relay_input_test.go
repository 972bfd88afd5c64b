//lint:file-ignore SA1019 the client's roots show what a server must not reach through a retry

package proxy

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/chain"
	"bailiff/engine"
)

// TestRelayedResultAsksNoInput: a relayed result (prompts/get here) that
// asks for more input is refused. The Go SDK client would put the
// server's roots/list to itself and send every root back in a retry,
// past the screening of roots bailiff gives the server's own requests.
func TestRelayedResultAsksNoInput(t *testing.T) {
	needNode(t)
	script, _ := filepath.Abs("testdata/hostile-roots-server.js")
	home := t.TempDir()
	state := filepath.Join(home, "state")
	os.MkdirAll(state, 0o755)
	ran := filepath.Join(t.TempDir(), "ran")
	pol, _ := engine.Load("p", []byte("version: 1\nrules:\n  - {id: all, tool: \"*\", action: allow}\n"))
	logPath := filepath.Join(state, "a.audit.jsonl")
	w, err := chain.Open(logPath, chain.Sync)
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{Policy: pol, Log: w, Evidence: chain.OpenEvidence(chain.EvidenceDir(logPath)), Server: "fs",
		Session: "roots", Principal: engine.Principal{Subject: "ana"}, Stderr: io.Discard,
		CallTimeout: 30 * time.Second, AskTimeout: 30 * time.Second, Approvals: testApprovals(t, logPath),
		Protected: []string{logPath, chain.EvidenceDir(logPath), filepath.Join(filepath.Dir(logPath), "state.db")}}
	clientR, proxyW := io.Pipe()
	proxyR, clientW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	cmd := exec.Command("node", script)
	cmd.Env = append(os.Environ(), "ADV_RAN="+ran)
	go func() { defer close(done); Run(ctx, opt, proxyR, proxyW, cmd); proxyW.Close(); w.Close() }()
	client := mcp.NewClient(&mcp.Implementation{Name: "editor", Version: "0"}, nil)
	client.AddRoots(&mcp.Root{URI: "file://" + home, Name: "home"})
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: clientR, Writer: clientW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "p"}); err == nil || !strings.Contains(err.Error(), "asked for more input") {
		t.Errorf("prompts/get asking for input: %v, want it refused", err)
	}
	cs.Close()
	<-done
	b, _ := os.ReadFile(ran)
	if strings.Contains(string(b), home) {
		t.Errorf("server received protected root via MRTR retry:\n%s", b)
	}
}

// TestSecondInitializeChangesNothing: only the session's first
// initialize, a request, says what the client can do; a later one, or one
// sent as a notification, cannot turn on in-band asks and let a client
// that could not be asked approve its own call.
func TestSecondInitializeChangesNothing(t *testing.T) {
	for _, mode := range []string{"notification", "request"} {
		t.Run(mode, func(t *testing.T) {
			ran := filepath.Join(t.TempDir(), "ran")
			rs := startRawWith(t, false, askPolicy, "-ran", ran)
			rs.roundTrip(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "x", "version": "1"}})
			rs.w.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
			rs.roundTrip(2, "tools/call", map[string]any{"name": "send", "arguments": map[string]any{"text": "a"}})
			init2 := `{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"x","version":"1"}}}`
			if mode == "request" {
				init2 = `{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"x","version":"1"}}}`
			}
			rs.w.Write([]byte(init2 + "\n"))
			rs.w.Write([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"send","arguments":{"text":"b"}}}` + "\n"))
			for rs.r.Scan() {
				var l map[string]any
				json.Unmarshal(rs.r.Bytes(), &l)
				if l["method"] == "elicitation/create" {
					b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": l["id"], "result": map[string]any{"action": "accept", "content": map[string]any{"approve": true}}})
					rs.w.Write(append(b, '\n'))
				}
				if l["id"] == float64(3) {
					break
				}
			}
			rs.close()
			// send appends its text to the ran file when it runs.
			b, _ := os.ReadFile(ran)
			if len(b) != 0 {
				t.Errorf("send ran after a second initialize claimed elicitation: %q", b)
			}
		})
	}
}
