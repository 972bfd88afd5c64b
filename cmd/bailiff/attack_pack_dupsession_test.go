package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/verify"
)

// TestAttackPackCountsSessionTwiceInOneLog: a session id that starts
// again after its end, in the same log, is one session to verify ("starts
// twice", and the second run's records are "after session ended", never
// judged). Reading sessions forgets one at its end, so a summary would
// count it twice, with the second run's calls, whose verdicts (here a
// forged allow of a tool the policy denies) verify never recomputed. A
// record finding makes the log not evidential: nothing of it is counted.
func TestAttackPackCountsSessionTwiceInOneLog(t *testing.T) {
	pol, err := engine.Load("policy.yaml", []byte("version: 1\nrules:\n  - {id: no-delete, tool: delete_message, action: deny}\n  - {id: read, tool: get_message, action: allow}\n"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "log.jsonl")
	w, err := chain.Open(file, chain.None)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	tools := []engine.ToolDef{{Name: "get_message", Digest: "sha256:" + strings.Repeat("1", 64)}, {Name: "delete_message", Digest: "sha256:" + strings.Repeat("2", 64)}}
	run := func(forge bool) {
		s, err := audit.Start(audit.Config{Policy: pol, Log: w}, at, "s1", &audit.SessionBody{Server: "mail", Principal: engine.Principal{Subject: "ana"}, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		at = at.Add(time.Second)
		args := map[string]any{"id": 7}
		c := &engine.Call{ID: "1", ToolRef: engine.ToolRef{Tool: "delete_message"}, Args: args}
		d := s.Decide(c, at)
		if forge {
			d = engine.Decision{Verdict: engine.Allow, Check: engine.CheckRules, Rule: "read"}
		}
		if _, err := s.Call(at, c, d, &audit.CallBody{Call: "1", Tool: "delete_message", Args: args, Digest: c.Digest}); err != nil {
			t.Fatal(err)
		}
		at = at.Add(time.Second)
		if err := s.End(at, &audit.EndBody{}); err != nil {
			t.Fatal(err)
		}
	}
	run(false)
	run(true)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	logs, sum, err := packLogs([]string{file}, "", time.Time{}, time.Time{}, verify.Options{Workers: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep := logs[0].Report
	var verdicts int
	for _, f := range rep.Findings {
		t.Logf("finding: %s: %s", f.Kind, f.Reason)
		if f.Kind == verify.FindVerdict {
			verdicts++
		}
	}
	if verify.Evidential(rep) {
		t.Fatal("a log with a session started twice, whose second run verify did not judge, is taken as evidence")
	}
	if sum.Sessions != 0 || sum.Calls != 0 || logs[0].Read != nil {
		t.Fatalf("the pack counts %d sessions and %d calls (%d allowed delete_message) of a log whose records verify did not all judge (it saw %d session(s), recomputed %d forged verdict(s))",
			sum.Sessions, sum.Calls, sum.ByTool["delete_message"]["allow"], rep.Sessions, verdicts)
	}
}
