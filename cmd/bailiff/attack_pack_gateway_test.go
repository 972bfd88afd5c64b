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

// TestAttackPackGatewayToolsOnWrongServer: in a gateway session the
// session's server is "gateway" and each call names its upstream server
// (Decide matches rules against the call's server). A summary that took
// a called tool's server from the session record would have the tools
// table ask Explain("gateway", tool): send_email shown as covered by a
// rule scoped to server "gateway", which can never apply to it, and the
// rule that decided every call (deny-mail) hidden.
func TestAttackPackGatewayToolsOnWrongServer(t *testing.T) {
	src := `version: 1
rules:
  - {id: allow-gw, server: gateway, tool: send_email, action: allow}
  - {id: deny-mail, server: mail, tool: send_email, action: deny, reason: no mail}
`
	pol, err := engine.Load("policy.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "gw.jsonl")
	w, err := chain.Open(file, chain.None)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	s, err := audit.Start(audit.Config{Policy: pol, Log: w}, at, "s1", &audit.SessionBody{Server: "gateway",
		Principal: engine.Principal{Subject: "ana"}, Tools: []engine.ToolDef{{Name: "mail.send_email", Digest: "sha256:" + strings.Repeat("1", 64)}}})
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"to": "bob@corp.example"}
	c := &engine.Call{ID: "1", ToolRef: engine.ToolRef{Server: "mail", Tool: "send_email"}, Args: args}
	d := s.Decide(c, at.Add(time.Second))
	if d.Verdict != engine.Deny || d.Rule != "deny-mail" {
		t.Fatalf("setup: the call is %s by %q, want deny by deny-mail", d.Verdict, d.Rule)
	}
	if _, err := s.Call(at.Add(time.Second), c, d, &audit.CallBody{Call: "1", Server: "mail", Tool: "send_email", Args: args, Digest: c.Digest}); err != nil {
		t.Fatal(err)
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
	pack, err := report.BuildPack(report.PackInput{Logs: logs, Summary: sum})
	if err != nil {
		t.Fatal(err)
	}
	md := string(pack.Markdown())
	var row string
	for _, ln := range strings.Split(md, "\n") {
		if strings.HasPrefix(ln, `| send\_email | `) && !strings.Contains(ln, "ALLOW") && strings.Contains(ln, "(") {
			row = ln
		}
	}
	t.Logf("tools table row: %s", row)
	if strings.Contains(row, "allow-gw") || !strings.Contains(row, "deny-mail") {
		t.Fatalf("the pack says send_email is decided by %q; every call to it was decided by deny-mail, and allow-gw can never match it.\nservers the summary saw for it: %v", row, sum.ToolServers["send_email"])
	}
}
