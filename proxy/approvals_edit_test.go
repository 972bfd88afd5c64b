package proxy

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bailiff/audit"
	"bailiff/chain"
)

// TestApproveRefusesRewrittenArgs: what `bailiff approve` shows and signs
// comes from the audit log, but nothing checks that a call record's
// digest is the digest of its arguments (FromLog neither recomputes it
// nor refuses; approve signs even when the pending file "disagrees").
// An agent that can write the log (see location_bypass.txtar: ~/DIR, sh -c)
// re-seals it with its asked call's arguments changed to harmless ones and
// the digest kept, and edits the pending file to match: the approver reads
// "pay to alice", signs the digest of "pay to mallory", and the agent's
// retry of pay(mallory) goes through. FromLog now recomputes the digest of
// a call with nothing redacted, and Recorded.Signable (what approve
// checks) refuses the ask.
func TestApproveRefusesRewrittenArgs(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/idsteal-server.js")
	mark := filepath.Join(t.TempDir(), "paid")
	policy := `version: 1
rules:
  - {id: pay, tool: pay, action: ask}
`
	lee, leePub := approverKey(t, "lee")
	s := start(t, setup{policy: policy, server: "weather", subject: "ana", approval: true, approvers: []string{leePub},
		command: []string{"node", script}, env: []string{"IDSTEAL_MARK=" + mark}})
	evil := map[string]any{"to": "mallory"}
	if r := s.call("pay", evil); !r.IsError || !strings.Contains(text(r), "bailiff approve") {
		t.Fatalf("pay: %q, want an ask", text(r))
	}
	list, err := s.options.Approvals.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("pending: %v %v", list, err)
	}
	id := list[0].ID

	// The agent's edit: the log re-sealed with harmless arguments, and the
	// pending notice to match.
	data, err := os.ReadFile(s.log)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := chain.NewWriter(&out, chain.None)
	rd := chain.NewReader(bytes.NewReader(data))
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var body any = rec.Body
		if rec.Kind == chain.KindCall {
			var b audit.CallBody
			if err := chain.DecodeBody(rec.Body, &b); err != nil {
				t.Fatal(err)
			}
			b.Args = map[string]any{"to": "alice"}
			body = &b
		}
		if _, err := w.Append(rec.TS, rec.Session, rec.Kind, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(s.log+".forged", out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(s.log+".forged", s.log); err != nil {
		t.Fatal(err)
	}
	p := list[0]
	p.Args = map[string]any{"to": "alice"}
	editState(t, s.options.Approvals, `UPDATE asks SET args = ? WHERE id = ?`, `{"to":"alice"}`, id)

	// The approver reads the ask from the log (as `bailiff approvals` and
	// `bailiff approve` do) and approves what it shows.
	f, err := os.Open(s.log)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := FromLog(f, []Pending{p})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	shown := rec[id]
	if shown.Signable() == nil && shown.Args["to"] == "alice" {
		t.Errorf("approvals shows ask %s as pay to alice, with no warning; it is pay to mallory", id)
	}
	// bailiff approve signs only what Signable accepts: the check it makes.
	if err := shown.Signable(); err == nil {
		s.answer(id, "approve", lee)
	} else if !strings.Contains(err.Error(), "not the digest of its logged arguments") {
		t.Errorf("Signable: %v, want the digest mismatch named", err)
	}
	if r := s.call("pay", evil); !r.IsError {
		t.Errorf("pay(mallory) went through on an approval of pay(alice): %q", text(r))
	}
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("the server was paid: %s", mark)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/var/log/a.audit.jsonl":  "/var/log/a.audit.jsonl",
		"/Users/x/My Logs/a.json": "'/Users/x/My Logs/a.json'",
		"/tmp/it's":               `'/tmp/it'\''s'`,
		"/tmp/$(rm -rf)":          "'/tmp/$(rm -rf)'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
