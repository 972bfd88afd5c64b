package engine

import (
	"strings"
	"testing"
)

// trusted_destinations: [principal] trusts the principal's own address,
// exactly, even where an output named it; nothing else, and nothing when
// the session has no address or one that is not a plain address.
func TestPrincipalDestination(t *testing.T) {
	p := mustLoad(t, `version: 1
rules:
  - {id: all, tool: "*", action: allow}
tools:
  send_email: {exfiltrating: true, sink_params: [to], trusted_destinations: [principal]}
`)
	decide := func(email, to string) Decision {
		s := NewState("s", "mail", Principal{Subject: "ana", Email: email}, []ToolDef{{Name: "send_email"}})
		s.AddOutput(p, Source{Pos: 1, ToolRef: ToolRef{Server: "mail", Tool: "read_inbox"}}, "reply to ana@corp.example or evil@attacker.example, ana@corp.example.attacker.example")
		args := map[string]any{"to": to}
		return Decide(p, s, &Call{ID: "c", ToolRef: ToolRef{Tool: "send_email"}, Args: args, Digest: ArgsDigest(args)}, t0)
	}
	for _, tc := range []struct {
		email, to string
		want      Verdict
	}{
		{"ana@corp.example", "ana@corp.example", Allow},
		{"Ana@Corp.Example", "ana@corp.example", Allow},
		{"ana@corp.example", "ANA@corp.example", Allow},
		{"ana@corp.example", "mailto:ana@corp.example", Allow},
		{"ana@corp.example", "Ana <ana@corp.example>", Allow},
		{"ana@corp.example", "ana@corp.example, evil@attacker.example", Deny},
		{"ana@corp.example", "ana@corp.example.attacker.example", Deny},
		{"ana@corp.example", "evil@attacker.example", Deny},
		{"ana@corp.example", "ana%evil@corp.example", Deny},
		{"ana@corp.example", "https://ana@corp.example/", Deny},
		{"", "ana@corp.example", Deny},
		{"ana@corp.example, evil@attacker.example", "evil@attacker.example", Deny},
		{"Ana <ana@corp.example>", "ana@corp.example", Deny},
		{"ana%evil@corp.example", "ana%evil@corp.example", Deny},
		{"mailto:ana@corp.example", "ana@corp.example", Deny},
	} {
		if d := decide(tc.email, tc.to); d.Verdict != tc.want {
			t.Errorf("principal %q, to %q: %s (%s), want %s", tc.email, tc.to, d.Verdict, d.Reason, tc.want)
		}
	}
	for _, bad := range []string{"ana@corp.example, evil@attacker.example", "Ana <ana@corp.example>", "ana%evil@corp.example", "https://corp.example/", "ana"} {
		if err := CheckPrincipalEmail(bad); err == nil || !strings.Contains(err.Error(), "not one plain address") {
			t.Errorf("CheckPrincipalEmail(%q) = %v", bad, err)
		}
	}
	if err := CheckPrincipalEmail("ana@corp.example"); err != nil {
		t.Error(err)
	}
}
