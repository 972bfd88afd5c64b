package verify

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/shadow"
)

// TestChannelOutputVerifies: a trace whose address arrived through a
// resource read (not a tool result) is recorded as a result record with a
// channel; verify recomputes the taint denial from the evidence, and a
// forged allow on that call is a finding. Without the channel's record
// the recomputed verdict would be an ask, so the test fails if verify
// stops feeding channel output to the state.
func TestChannelOutputVerifies(t *testing.T) {
	p := mainPolicy(t)
	data, ev := recordTrace(t, p, "../fixtures/traces/main/deny_taint_resource_channel.jsonl")
	if !bytes.Contains(data, []byte(`"tool":"resources/read","channel":"resources/read","status":"ok"`)) {
		t.Fatalf("no resources/read result record in\n%s", data)
	}
	rep, err := Log("audit", bytes.NewReader(data), ev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 0 || rep.Calls != 1 {
		t.Fatalf("clean log: %d calls, findings %+v", rep.Calls, rep.Findings)
	}

	// Shadow and ablate read the log as events: the channel comes back,
	// and a candidate judged on that history sees the same taint.
	var channels []string
	err = audit.LogSessions("audit", bytes.NewReader(data), ev, func(ls audit.LogSession) error {
		for _, e := range ls.Events {
			if e.Result != nil && e.Result.Body.Channel != "" {
				channels = append(channels, e.Result.Body.Channel+"/"+e.Result.Body.Tool)
			}
		}
		return shadow.CompareSession(ls.Policy, ls.Policy, "audit", ls.Events, func(pr shadow.Pair) {
			if pr.Candidate.Verdict != engine.Deny || pr.Candidate.Check != engine.CheckTaint {
				t.Errorf("candidate over the log: %+v, want the taint denial", pr.Candidate)
			}
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "notifications/message/notifications/message resources/read/resources/read"; strings.Join(channels, " ") != want {
		t.Errorf("channels read back: %q, want %q", channels, want)
	}

	// Forge the denial into an allow, re-sealing the chain so only the
	// verdict is wrong.
	forged := reseal(t, data, func(kind chain.Kind, body []byte) []byte {
		if kind != chain.KindCall {
			return body
		}
		b := bytes.Replace(body, []byte(`"verdict":"deny","check":"taint"`), []byte(`"verdict":"allow","check":"rules"`), 1)
		if bytes.Equal(b, body) {
			t.Fatalf("no taint denial to forge in %s", body)
		}
		return b
	})
	rep, err = Log("forged", bytes.NewReader(forged), ev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Kind != FindVerdict || !strings.Contains(rep.Findings[0].Reason, "resources/read") {
		t.Fatalf("forged verdict: findings %+v, want one verdict finding naming the resource read", rep.Findings)
	}

	// A channel record that claims a tool's provenance is refused.
	claimed := reseal(t, data, func(kind chain.Kind, body []byte) []byte {
		return bytes.Replace(body, []byte(`"tool":"resources/read","channel"`), []byte(`"tool":"get_message","channel"`), 1)
	})
	rep, err = Log("claimed", bytes.NewReader(claimed), ev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rep.Findings {
		found = found || (f.Kind == FindRecord && strings.Contains(f.Reason, "must be its channel"))
	}
	if !found {
		t.Fatalf("a channel record naming a tool: findings %+v", rep.Findings)
	}
}

// reseal rewrites each record's body with edit and writes a fresh chain
// over the edited records.
func reseal(t *testing.T, data []byte, edit func(chain.Kind, []byte) []byte) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "resealed.jsonl")
	w, err := chain.Open(path, chain.None)
	if err != nil {
		t.Fatal(err)
	}
	rd := chain.NewReader(bytes.NewReader(data))
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		if _, err := w.Append(rec.TS, rec.Session, rec.Kind, json.RawMessage(edit(rec.Kind, rec.Body))); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	out, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
