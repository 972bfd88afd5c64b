package verify

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
)

// TestGrantOutlivingTheTTL: a grant's expiry is not under the approver's
// signature, so an edited log can give an approval a day's life. Verify
// says so, and recomputes with the approval expired when the policy's TTL
// says it is: the call that rode the extended grant no longer matches.
// An expiry within the TTL is no finding.
func TestGrantOutlivingTheTTL(t *testing.T) {
	pol, err := engine.Load("main.yaml", mustRead(t, "../fixtures/policies/main.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	skey, _, err := chain.GenerateKey(rand.Reader, "lee")
	if err != nil {
		t.Fatal(err)
	}
	trace := func(expires string) string {
		return `{"start":{"session":"s1","server":"mail","principal":{"subject":"ana","scopes":["mail.read","mail.send"]},"tools":["get_message","reply_to_email"],"at":"2026-03-01T10:00:00Z"}}
{"call":{"id":"c1","tool":"reply_to_email","args":{"originalUid":9,"text":"ok"},"at":"2026-03-01T10:00:01Z"}}
{"call":{"id":"c2","tool":"get_message","args":{"uid":9},"at":"2026-03-01T10:00:02Z"}}
{"grant":{"call":"c1","approver":"lee","answer":"approve","expires":"` + expires + `","at":"2026-03-01T10:01:00Z"}}
{"call":{"id":"c3","tool":"reply_to_email","args":{"originalUid":9,"text":"ok"},"at":"2026-03-01T12:00:00Z"}}
{"end":{"at":"2026-03-01T12:00:01Z"}}
`
	}
	for _, c := range []struct {
		expires  string
		findings []string
	}{
		{"2026-03-01T10:16:00Z", nil},
		{"2026-03-02T10:01:00Z", []string{FindGrant, FindGrant}},
	} {
		events, err := replay.ParseTrace("t.jsonl", strings.NewReader(trace(c.expires)))
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		ev := &memStore{m: map[string][]byte{}}
		rec := &audit.Recorder{Policy: pol, Log: chain.NewWriter(&log, chain.None), Evidence: ev, Approvers: map[string]string{"lee": skey}}
		if err := rec.Record("t.jsonl", events); err != nil {
			t.Fatal(err)
		}
		rep, err := Log("t.jsonl", bytes.NewReader(log.Bytes()), ev, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, f := range rep.Findings {
			kinds = append(kinds, f.Kind)
		}
		if strings.Join(kinds, " ") != strings.Join(c.findings, " ") {
			t.Errorf("expires %s: findings %+v, want kinds %v", c.expires, rep.Findings, c.findings)
		}
		if len(rep.Findings) == 2 {
			if !strings.Contains(rep.Findings[0].Reason, "approval TTL (15m0s)") {
				t.Errorf("the finding does not name the TTL: %s", rep.Findings[0].Reason)
			}
			// The call the extended grant let through, recomputed asked.
			if f := rep.Findings[1]; f.Call != "c3" || !strings.HasPrefix(f.Recorded, "allow") || !strings.HasPrefix(f.Recomputed, "ask") {
				t.Errorf("second finding %+v, want c3 recorded allowed and recomputed asked", f)
			}
		}
	}
}
