package engine

import (
	"testing"
	"time"
)

// TestHeadroom: a named tenant's headroom is its ceiling less what it
// spent in the window holding now (none in a later window); a tenant under
// "*" appears once it has spent.
func TestHeadroom(t *testing.T) {
	p := limitsPolicy(t, `  acme: {ceiling: 10, window: 24h}
  "*": {ceiling: 5, window: 24h}
`)
	l := NewLedger()
	at := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	if got := p.Headroom(l, at); len(got) != 1 || got[0] != (Headroom{Tenant: "acme", Window: "24h", Ceiling: 10}) {
		t.Fatalf("before any call: %+v", got)
	}
	a := newLedgerSession(t, p, l, ana)
	a.want("fetch", at, Allow, CheckRules, "")
	a.want("echo", at.Add(time.Second), Allow, CheckRules, "")
	g := newLedgerSession(t, p, l, Principal{Subject: "gus", Tenant: "globex"})
	g.want("echo", at.Add(2*time.Second), Allow, CheckRules, "")
	got := p.Headroom(l, at.Add(time.Hour))
	want := []Headroom{{"acme", "24h", 10, 4}, {"globex", "24h", 5, 1}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("after acme spent 4 and globex 1: %+v, want %+v", got, want)
	}
	if got := p.Headroom(l, at.Add(25*time.Hour)); len(got) != 2 || got[0].Spent != 0 || got[1].Spent != 0 {
		t.Fatalf("in the next window: %+v", got)
	}
	if got := mustLoad(t, "version: 1\nrules: []\n").Headroom(l, at); got != nil {
		t.Fatalf("a policy without budgets: %+v", got)
	}
}
