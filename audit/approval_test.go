package audit

import (
	"crypto/rand"
	"strings"
	"testing"

	"bailiff/chain"
	"bailiff/engine"
)

// TestApprovalSignature: a signature verifies over exactly the approval it
// was made for, and over nothing else.
func TestApprovalSignature(t *testing.T) {
	skey, vkey, err := chain.GenerateKey(rand.Reader, "lee")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := chain.PublicKey(skey)
	if err != nil || pub != vkey {
		t.Fatalf("PublicKey = %q, %v; want %q", pub, err, vkey)
	}
	a := Approval{ID: "s1-c1", Kind: ApproveCall, Session: "s1", ToolRef: engine.ToolRef{Server: "mail", Tool: "send_email"}, Digest: "sha256:aa", Answer: "approve", Time: "2026-12-02T10:00:00.000000000Z"}
	sig, err := SignApproval(a, skey)
	if err != nil {
		t.Fatal(err)
	}
	if name, err := TrustedApprover(a, sig, []string{vkey}, "ana"); err != nil || name != "lee" {
		t.Fatalf("a good signature: %q, %v", name, err)
	}
	for _, c := range []struct {
		name string
		edit func(*Approval, *Signature)
		want string
	}{
		{"another id", func(a *Approval, s *Signature) { a.ID = "s1-c2" }, "does not verify"},
		{"another answer", func(a *Approval, s *Signature) { a.Answer = "decline" }, "does not verify"},
		{"another digest", func(a *Approval, s *Signature) { a.Digest = "sha256:bb" }, "does not verify"},
		{"another session", func(a *Approval, s *Signature) { a.Session = "s2" }, "does not verify"},
		{"another kind", func(a *Approval, s *Signature) { a.Kind = ApproveDefinition }, "does not verify"},
		{"another time", func(a *Approval, s *Signature) { s.Time = "2026-12-02T10:00:01.000000000Z" }, "does not verify"},
		{"no signature", func(a *Approval, s *Signature) { s.Sig = "" }, "empty or malformed"},
	} {
		a2, s2 := a, sig
		c.edit(&a2, &s2)
		if _, err := TrustedApprover(a2, s2, []string{vkey}, "ana"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := TrustedApprover(a, sig, nil, "ana"); err == nil || !strings.Contains(err.Error(), "not one of the session's approver keys") {
		t.Errorf("an untrusted key: %v", err)
	}
	if _, err := TrustedApprover(a, sig, []string{vkey}, "lee"); err == nil || !strings.Contains(err.Error(), "principal") {
		t.Errorf("the principal's key: %v", err)
	}
	eskey, evkey, _ := chain.GenerateKey(rand.Reader, ElicitationApprover)
	esig, _ := SignApproval(a, eskey)
	if _, err := TrustedApprover(a, esig, []string{evkey}, "ana"); err == nil {
		t.Error("a key named elicitation was trusted")
	}
}
