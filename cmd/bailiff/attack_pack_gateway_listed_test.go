package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/report"
	"bailiff/verify"
)

// TestAttackPackGatewayListedToolOnGatewayServer: a gateway session's
// record lists its tools with their upstream prefix ("mail.delete_message")
// on server "gateway", and audit.Summary notes every listed tool on the
// session's server as written. Only a call's tool is put on its own
// server. A tool the upstream lists (--tools) but no call used is then
// known on no server of its own, and the pack explains it on every server
// the sessions ran against, "gateway" included: the tools table shows
// delete_message as allowed by allow-gw, a rule scoped to server
// "gateway", which can never match a gateway call (Decide matches the
// upstream's name); the only rule that can decide it is deny-mail.
func TestAttackPackGatewayListedToolOnGatewayServer(t *testing.T) {
	src := `version: 1
rules:
  - {id: allow-gw, server: gateway, tool: delete_message, action: allow}
  - {id: deny-mail, server: mail, tool: delete_message, action: deny, reason: no deleting}
  - {id: read-mail, server: mail, tool: get_message, action: allow}
`
	pol, err := engine.Load("policy.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "gw.jsonl")
	w, err := chain.Open(file, chain.None)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	s, err := audit.Start(audit.Config{Policy: pol, Log: w}, at, "s1", &audit.SessionBody{Server: "gateway",
		Principal: engine.Principal{Subject: "ana"}, Tools: []engine.ToolDef{
			{Name: "mail.delete_message", Digest: "sha256:" + strings.Repeat("2", 64)},
			{Name: "mail.get_message", Digest: "sha256:" + strings.Repeat("1", 64)}}})
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"id": 3}
	c := &engine.Call{ID: "1", ToolRef: engine.ToolRef{Server: "mail", Tool: "get_message"}, Args: args}
	d := s.Decide(c, at.Add(time.Second))
	if d.Verdict != engine.Allow || d.Rule != "read-mail" {
		t.Fatalf("setup: the call is %s by %q, want allow by read-mail", d.Verdict, d.Rule)
	}
	if _, err := s.Call(at.Add(time.Second), c, d, &audit.CallBody{Call: "1", Server: "mail", Tool: "get_message", Args: args, Digest: c.Digest}); err != nil {
		t.Fatal(err)
	}
	// What a call to delete_message through the gateway would be decided by.
	probe := s.Decide(&engine.Call{ID: "p", ToolRef: engine.ToolRef{Server: "mail", Tool: "delete_message"}, Args: map[string]any{"id": 1}}, at.Add(time.Second))
	if probe.Rule != "deny-mail" {
		t.Fatalf("setup: delete_message through the gateway is decided by %q", probe.Rule)
	}
	if err := s.End(at.Add(2*time.Second), &audit.EndBody{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	logs, sum, err := packLogs([]string{file}, "", time.Time{}, time.Time{}, verify.Options{Workers: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(logs[0].Report.Findings); n != 0 {
		t.Fatalf("setup: verify finds %d problems: %+v", n, logs[0].Report.Findings)
	}
	listing := []byte(`{"tools":[{"name":"get_message","inputSchema":{"type":"object"}},{"name":"delete_message","inputSchema":{"type":"object"}}]}`)
	listed, err := engine.ListedTools(listing)
	if err != nil {
		t.Fatal(err)
	}
	pack, err := report.BuildPack(report.PackInput{Logs: logs, Summary: sum, Tools: map[string][]engine.ListedTool{"mail-tools.json": listed}})
	if err != nil {
		t.Fatal(err)
	}
	md := string(pack.Markdown())
	var row string
	for _, ln := range strings.Split(md, "\n") {
		// Its row, or the line the tools that saw no call are folded
		// into, where it is the only tool.
		if strings.HasPrefix(ln, `| delete\_message | `) && strings.Contains(ln, "(") ||
			strings.Contains(ln, `still gated): delete\_message (rule: `) {
			row = ln
		}
	}
	t.Logf("tools table row: %s\nservers the summary saw: %v", row, sum.ToolServers)
	if row == "" {
		t.Fatalf("setup: no delete_message row in\n%s", md)
	}
	if strings.Contains(row, "allow-gw") {
		t.Fatalf("the pack says delete_message is covered by allow-gw, a rule for server \"gateway\" that no gateway call can match (a call to it is decided by deny-mail): %s", row)
	}
}
