package engine

import (
	"testing"
	"time"
)

// TestBudgetPerServer: two servers behind one gateway both expose
// send_email; a bare-name contract applies to both, but each spends its
// own calls, so server A's use never exhausts (or hides) server B's.
func TestBudgetPerServer(t *testing.T) {
	p := mustLoad(t, `version: 1
rules:
  - {id: send, tool: send_email, action: allow}
tools:
  send_email: {max_calls: 1}
`)
	s := NewState("s", "gateway", Principal{}, []ToolDef{{Name: "a.send_email"}, {Name: "b.send_email"}})
	now := time.Unix(0, 0)
	call := func(id, server string) Decision {
		c := &Call{ID: id, ToolRef: ToolRef{Server: server, Tool: "send_email"}, Args: map[string]any{}}
		d := Decide(p, s, c, now)
		s.Apply(p, c, d, time.Time{})
		return d
	}
	if d := call("1", "a"); d.Verdict != Allow {
		t.Fatalf("first call on a: %s (%s)", d.Verdict, d.Reason)
	}
	if d := call("2", "b"); d.Verdict != Allow {
		t.Errorf("b's send_email was charged for a's call: %s by %s (%s)", d.Verdict, d.Check, d.Reason)
	}
	if d := call("3", "a"); d.Verdict != Deny || d.Check != CheckBudget {
		t.Errorf("a's second call: %s by %s, want deny by budget", d.Verdict, d.Check)
	}
	// A failed call gives back the budget of its own server only.
	s.Failed("2", time.Time{})
	if d := call("4", "b"); d.Verdict != Allow {
		t.Errorf("b after its call failed: %s by %s (%s)", d.Verdict, d.Check, d.Reason)
	}
	if d := call("5", "a"); d.Verdict != Deny || d.Check != CheckBudget {
		t.Errorf("a got b's refund: %s by %s", d.Verdict, d.Check)
	}
}

// TestPinNamesDoNotCollide: server "a.b" with tool "c" and server "a"
// with tool "b.c" would both be pinned as "a.b.c"; a call must not pass
// pinning on the pin of the other tool.
func TestPinNamesDoNotCollide(t *testing.T) {
	p := mustLoad(t, `version: 1
rules:
  - {id: all, tool: "*", action: allow}
`)
	// Listed by server "a" as its tool "b.c": the dotless reading.
	s := NewState("s", "gateway", Principal{}, []ToolDef{{Name: "a.b.c", Digest: "d1"}})
	now := time.Unix(0, 0)
	if d := Decide(p, s, &Call{ToolRef: ToolRef{Server: "a", Tool: "b.c"}, Args: map[string]any{}}, now); d.Verdict != Allow {
		t.Fatalf("the listed tool: %s by %s (%s)", d.Verdict, d.Check, d.Reason)
	}
	d := Decide(p, s, &Call{ToolRef: ToolRef{Server: "a.b", Tool: "c"}, Args: map[string]any{}}, now)
	if d.Verdict != Deny || d.Check != CheckPinning {
		t.Errorf("server a.b's tool c passed on a/b.c's pin: %s by %s (%s)", d.Verdict, d.Check, d.Reason)
	}
}

// TestMayAccept: nobody, and the principal itself, may not accept a changed
// definition; another person may.
func TestMayAccept(t *testing.T) {
	s := NewState("s", "mail", Principal{Subject: "agent"}, nil)
	for approver, want := range map[string]bool{"": false, "agent": false, "ana": true} {
		if got := s.MayAccept(approver); got != want {
			t.Errorf("MayAccept(%q) = %v, want %v", approver, got, want)
		}
	}
}

// TestToolRefNames: the one reading of a gateway's tool names. A name
// reads back at its first dot; a server name that holds a dot would be
// read as another server's tool, so it is not routable and may not be
// configured.
func TestToolRefNames(t *testing.T) {
	for _, tc := range []struct {
		ref      ToolRef
		session  string
		listed   string
		in       string
		routable bool
	}{
		{ToolRef{"mail", "send"}, "gateway", "mail.send", "mail.send", true},
		{ToolRef{"mail", "send"}, "mail", "mail.send", "send", true},
		{ToolRef{"", "send"}, "mail", "send", "send", true},
		{ToolRef{"a", "b.c"}, "gateway", "a.b.c", "a.b.c", true},
		{ToolRef{"a.b", "c"}, "gateway", "a.b.c", "a.b.c", false},
	} {
		if got := tc.ref.String(); got != tc.listed {
			t.Errorf("%#v.String() = %q, want %q", tc.ref, got, tc.listed)
		}
		if got := tc.ref.In(tc.session); got != tc.in {
			t.Errorf("%#v.In(%q) = %q, want %q", tc.ref, tc.session, got, tc.in)
		}
		if got := tc.ref.Routable(); got != tc.routable {
			t.Errorf("%#v.Routable() = %v, want %v", tc.ref, got, tc.routable)
		}
		if back, ok := ParseToolRef(tc.listed); tc.routable && tc.ref.Server != "" && (!ok || back != tc.ref) {
			t.Errorf("ParseToolRef(%q) = %#v, %v; want %#v", tc.listed, back, ok, tc.ref)
		}
	}
	if _, ok := ParseToolRef("send"); ok {
		t.Error("a bare name read as naming a server")
	}
	for name, ok := range map[string]bool{"mail": true, "": false, "a.b": false, "a b": false, "a\tb": false, "a\nb": false, "files-2": true} {
		if err := CheckServerName(name); (err == nil) != ok {
			t.Errorf("CheckServerName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}
