package proxy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bailiff/internal/fault"
)

// TestHandlesInOutputAndArguments: text with handles like "@john.doe"
// once crashed the taint tokenizer mid-session (no answer, no end record)
// or inside Decide (the call missing from the log). Through the real
// filesystem server, such text is read and written like any other.
func TestHandlesInOutputAndArguments(t *testing.T) {
	server := peer(t, "@modelcontextprotocol/server-filesystem/dist/index.js")
	root := t.TempDir()
	note := "thanks @john.doe\n@app.route(\"/\")\nTeam @corp.example\n"
	if err := os.WriteFile(filepath.Join(root, "notes.py"), []byte(note), 0o644); err != nil {
		t.Fatal(err)
	}
	policy := fmt.Sprintf(`version: 1
packs: [filesystem]
rules:
  - {id: read, tool: read_text_file, action: allow}
  - {id: write, tool: write_file, action: allow}
tools:
  write_file:
    allowed_path_prefixes: [%s]
`, root)
	s := start(t, setup{policy: policy, server: "fs", command: []string{"node", server, root}})
	if r := s.call("read_text_file", map[string]any{"path": filepath.Join(root, "notes.py")}); r.IsError || !strings.Contains(text(r), "@john.doe") {
		t.Fatalf("read: %v %q", r.IsError, text(r))
	}
	if r := s.call("write_file", map[string]any{"path": filepath.Join(root, "reply.txt"), "content": "cc @john.doe and @corp.example"}); r.IsError {
		t.Fatalf("write: %q", text(r))
	}
	rep := s.verify()
	if rep.Calls != 2 {
		t.Errorf("the log holds %d calls, want 2", rep.Calls)
	}
	log, _ := os.ReadFile(s.log)
	if !strings.Contains(string(log), `"kind":"end"`) {
		t.Errorf("no end record:\n%s", log)
	}
}

// TestInternalErrorRefusesOneCall: a panic while one call is decided or
// recorded refuses that call, says so in the log, forwards nothing, and
// the gateway goes on serving the next call.
func TestInternalErrorRefusesOneCall(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/faulty-server.js")
	restore := fault.Set(func(point, tool string) {
		if (point == fault.Decide && tool == "hang") || (point == fault.Record && tool == "crash") {
			panic("injected at " + point)
		}
	})
	defer restore()
	policy := "version: 1\nrules:\n  - {id: all, tool: \"*\", action: allow}\n"
	s := start(t, setup{policy: policy, server: "faulty", command: []string{"node", script}})
	for _, tool := range []string{"hang", "crash"} {
		// Forwarded, hang would never answer and crash would end the
		// session: an answer at all shows neither reached the server.
		r := s.call(tool, nil)
		if !r.IsError || !strings.Contains(text(r), "internal error: injected") {
			t.Errorf("%s: %v %q, want an internal-error refusal", tool, r.IsError, text(r))
		}
		if r := s.call("echo", map[string]any{"text": "still here"}); r.IsError || text(r) != "echo: still here" {
			t.Fatalf("echo after the %s panic: %v %q", tool, r.IsError, text(r))
		}
	}
	rep := s.verify()
	if rep.Calls != 2 {
		t.Errorf("the log holds %d calls, want the 2 echoes", rep.Calls)
	}
	log, _ := os.ReadFile(s.log)
	if n := strings.Count(string(log), "refused by an internal error: injected"); n != 2 {
		t.Errorf("%d records name the internal error, want 2:\n%s", n, log)
	}
}
