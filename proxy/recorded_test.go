package proxy

import (
	"bytes"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
)

// TestFromLogEndedWhateverItsBody: an ask whose session has an end record
// is ended, even when that record's body does not read as an end's
// (verify ends the session on it too): an answer to it would approve
// nothing, and bailiff approve must say so.
func TestFromLogEndedWhateverItsBody(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	args := map[string]any{"to": "alice"}
	digest := engine.ArgsDigest(args)
	for _, end := range []any{&audit.EndBody{}, map[string]any{"bogus": 1}} {
		var buf bytes.Buffer
		w := chain.NewWriter(&buf, chain.None)
		for _, r := range []struct {
			kind chain.Kind
			body any
		}{
			{chain.KindSession, &audit.SessionBody{Server: "pay", Principal: engine.Principal{Subject: "ana"}, Tools: []engine.ToolDef{{Name: "pay"}}}},
			{chain.KindCall, &audit.CallBody{Call: "c1", Tool: "pay", Args: args, Digest: digest, Decision: audit.Decision{Verdict: "ask", Check: "rules", Reason: "r"}}},
			{chain.KindEnd, end},
		} {
			if _, err := w.Append(at, "s1", r.kind, r.body); err != nil {
				t.Fatal(err)
			}
		}
		p := Pending{ID: "s1-c1", Session: "s1", Server: "pay", Call: "c1", Tool: "pay", Args: args, Digest: digest}
		rec, err := FromLog(bytes.NewReader(buf.Bytes()), []Pending{p})
		if err != nil {
			t.Fatal(err)
		}
		if r := rec[p.ID]; !r.Found || !r.Ended {
			t.Errorf("end body %v: found %v, ended %v; want an ended ask", end, r.Found, r.Ended)
		}
	}
}
