package verify_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
	"bailiff/verify"
)

// TestAttackSignedGrantOutlivesTTL: an approver's signature covers the
// ask, the answer and the signed time, never the grant's expiry, and
// verify takes a grant record's "expires" as written. A log whose signed
// out-of-band grant expires in 2099 (the gateway writes signed time + the
// policy's 15-minute TTL) lets an identical call three hours later be
// allowed by it, and verify finds nothing: the TTL that "runs from the
// signature" is enforced by no one offline.
func TestAttackSignedGrantOutlivesTTL(t *testing.T) {
	polData, err := os.ReadFile("../fixtures/chain/src/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := engine.Load("policy.yaml", polData)
	if err != nil {
		t.Fatal(err)
	}
	lee, err := os.ReadFile("../fixtures/chain/src/lee.key")
	if err != nil {
		t.Fatal(err)
	}
	trace := strings.Join([]string{
		`{"start":{"session":"s1","server":"mail","principal":{"subject":"ana","scopes":["mail.read","mail.send"]},"tools":["get_recent_messages","archive_message"],"at":"2026-11-03T10:00:00Z"}}`,
		`{"call":{"id":"d1","tool":"archive_message","args":{"id":9},"at":"2026-11-03T10:00:01Z"}}`,
		`{"call":{"id":"d2","tool":"get_recent_messages","args":{"limit":1},"at":"2026-11-03T10:00:02Z"}}`,
		`{"grant":{"id":"g-d1","call":"d1","approver":"lee","answer":"approve","expires":"2099-01-01T00:00:00Z","at":"2026-11-03T10:05:00Z"}}`,
		`{"call":{"id":"d3","tool":"archive_message","args":{"id":9},"at":"2026-11-03T13:00:00Z"}}`,
	}, "\n") + "\n"
	events, err := replay.ParseTrace("t.jsonl", strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var buf bytes.Buffer
	r := &audit.Recorder{Policy: pol, Log: chain.NewWriter(&buf, chain.None), Evidence: chain.OpenEvidence(dir),
		Approvers: map[string]string{"lee": strings.TrimSpace(string(lee))}}
	if err := r.Record("t.jsonl", events); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"call":"d3"`)) || !bytes.Contains(buf.Bytes(), []byte(`"grant":"g-d1"`)) {
		t.Fatalf("unexpected log:\n%s", buf.Bytes())
	}
	allowed := false
	for _, ln := range bytes.Split(buf.Bytes(), []byte("\n")) {
		if bytes.Contains(ln, []byte(`"call":"d3"`)) && bytes.Contains(ln, []byte(`"verdict":"allow"`)) {
			allowed = true
		}
	}
	if !allowed {
		t.Fatalf("setup: d3 is not allowed by the long-lived grant:\n%s", buf.Bytes())
	}
	rep, err := verify.Log("t", bytes.NewReader(buf.Bytes()), chain.OpenEvidence(dir), verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) == 0 {
		t.Fatalf("a signed grant expiring in 2099 (signed 10:05, TTL %s) allowed call d3 at 13:00 and verify found nothing", pol.ApprovalTTL())
	}
}
