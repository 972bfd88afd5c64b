package engine

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// limitsPolicy is a policy with a tenant ceiling and costs: "fetch" costs
// 3, "free" costs 0, "echo" has no contract (cost 1), "send" asks.
func limitsPolicy(t testing.TB, tenants string) *Policy {
	t.Helper()
	return mustLoad(t, `version: 1
rules:
  - {id: send, tool: send, action: ask}
  - {id: any, tool: "*", action: allow}
tools:
  fetch: {cost: 3}
  free: {cost: 0}
  send: {exfiltrating: false}
tenants:
`+tenants)
}

// ledgerSession drives one session's calls through Decide and Apply, as
// the audit layer does, on a ledger it may share.
type ledgerSession struct {
	t *testing.T
	p *Policy
	s *State
	n int
}

func newLedgerSession(t *testing.T, p *Policy, l *Ledger, who Principal) *ledgerSession {
	s := NewState("s-"+who.Subject, "srv", who, []ToolDef{{Name: "fetch"}, {Name: "free"}, {Name: "echo"}, {Name: "eval"}, {Name: "send"}})
	if l != nil {
		s.ShareLedger(l)
	}
	return &ledgerSession{t: t, p: p, s: s}
}

// call decides a call at at and applies the decision; it returns the
// decision and the call, for a later Failed or Answer.
func (ls *ledgerSession) call(tool string, at time.Time) (Decision, *Call) {
	ls.n++
	c := &Call{ID: "c" + strconv.Itoa(ls.n), ToolRef: ToolRef{Server: "srv", Tool: tool}, Args: map[string]any{}}
	c.Digest = ArgsDigest(c.Args)
	d := Decide(ls.p, ls.s, c, at)
	if d.Verdict != Ask {
		ls.s.Apply(ls.p, c, d, at)
	}
	return d, c
}

func (ls *ledgerSession) want(tool string, at time.Time, v Verdict, check Check, reason string) *Call {
	ls.t.Helper()
	d, c := ls.call(tool, at)
	if d.Verdict != v || d.Check != check || !strings.Contains(d.Reason, reason) {
		ls.t.Fatalf("%s at %s: got %s by %s (%s), want %s by %s with %q", tool, at.Format(time.RFC3339Nano), d.Verdict, d.Check, d.Reason, v, check, reason)
	}
	return c
}

var ana = Principal{Subject: "ana", Tenant: "acme"}

func TestTenantBudgetConsumption(t *testing.T) {
	p := limitsPolicy(t, "  acme: {ceiling: 7, window: 24h}\n")
	ls := newLedgerSession(t, p, nil, ana)
	at := t0.Add(time.Hour)
	ls.want("fetch", at, Allow, CheckRules, "")                  // 3
	failed := ls.want("fetch", at.Add(1), Allow, CheckRules, "") // 6, then fails
	ls.s.Failed(failed.ID, at.Add(1))                            // 3
	ls.want("free", at.Add(2), Allow, CheckRules, "")            // cost 0
	ls.want("echo", at.Add(3), Allow, CheckRules, "")            // no contract: 4
	ls.want("fetch", at.Add(4), Allow, CheckRules, "")           // 7
	ls.want("echo", at.Add(5), Deny, CheckTenantBudget, `tenant "acme" has spent 7 of its ceiling 7 this 24h window and this call costs 1; the window resets at 2026-01-02T00:00:00Z`)
	ls.want("free", at.Add(6), Allow, CheckRules, "") // costs nothing: never crosses
	// A denied call spent nothing: the refusal still names 7.
	ls.want("fetch", at.Add(7), Deny, CheckTenantBudget, "has spent 7 of its ceiling 7")

	// An ask spends nothing until answered; a decline spends nothing.
	p2 := limitsPolicy(t, "  acme: {ceiling: 2, window: 24h}\n")
	ls = newLedgerSession(t, p2, nil, ana)
	asked := ls.want("send", at, Ask, CheckRules, "")
	declined := Answer(p2, ls.s, asked, Decision{Verdict: Ask, Check: CheckRules, Rule: "send"},
		Grant{ID: "g1", ToolRef: asked.ToolRef, Digest: asked.Digest, Approver: "bo", Approve: false, Expires: at.Add(time.Hour)}, at.Add(1))
	if declined.Verdict != Deny {
		t.Fatalf("decline: %+v", declined)
	}
	ls.s.Apply(p2, asked, declined, at.Add(1))
	ls.want("echo", at.Add(2), Allow, CheckRules, "")
	ls.want("echo", at.Add(3), Allow, CheckRules, "")
	ls.want("echo", at.Add(4), Deny, CheckTenantBudget, "has spent 2 of its ceiling 2")
}

func TestTenantBudgetSharedAcrossSessions(t *testing.T) {
	p := limitsPolicy(t, "  acme: {ceiling: 2, window: 24h}\n  \"*\": {ceiling: 1, window: 24h}\n")
	l := NewLedger()
	a := newLedgerSession(t, p, l, ana)
	b := newLedgerSession(t, p, l, Principal{Subject: "cy", Tenant: "acme"})
	other := newLedgerSession(t, p, l, Principal{Subject: "di", Tenant: "globex"})
	local := newLedgerSession(t, p, l, Principal{Subject: "ed"})
	a.want("echo", t0, Allow, CheckRules, "")
	b.want("echo", t0.Add(1), Allow, CheckRules, "")
	a.want("echo", t0.Add(2), Deny, CheckTenantBudget, `tenant "acme" has spent 2`)
	b.want("echo", t0.Add(3), Deny, CheckTenantBudget, `tenant "acme" has spent 2`)
	// Other tenants, named by "*" alone, each have their own ceiling.
	other.want("echo", t0.Add(4), Allow, CheckRules, "")
	other.want("echo", t0.Add(5), Deny, CheckTenantBudget, `tenant "globex" has spent 1 of its ceiling 1`)
	local.want("echo", t0.Add(6), Allow, CheckRules, "")
	local.want("echo", t0.Add(7), Deny, CheckTenantBudget, `tenant "local" has spent 1`)

	// Without a "*" entry, a tenant the policy does not name spends
	// nothing at all: never an unbounded one.
	p = limitsPolicy(t, "  acme: {ceiling: 2, window: 24h}\n")
	newLedgerSession(t, p, nil, Principal{Subject: "di", Tenant: "globex"}).want("free", t0, Deny, CheckTenantBudget, `tenant "globex" has no ceiling in the policy`)
}

func TestTenantBudgetWindowEdges(t *testing.T) {
	cases := []struct {
		name, spec string
		spend      time.Time // the call that spends the whole ceiling
		last, next time.Time // the last instant of its window, and the reset
	}{
		{"fixed 24h", "{ceiling: 1, window: 24h}",
			time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 7, 23, 59, 59, 999999999, time.UTC), time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC)},
		{"fixed 90m", "{ceiling: 1, window: 90m}",
			time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 7, 1, 29, 59, 999999999, time.UTC), time.Date(2026, 3, 7, 1, 30, 0, 0, time.UTC)},
		// New York springs forward on 2026-03-08: that day is 23 hours,
		// from 05:00Z to 04:00Z the next day.
		{"day across spring forward", "{ceiling: 1, window: day, zone: America/New_York}",
			time.Date(2026, 3, 8, 5, 0, 0, 0, time.UTC), time.Date(2026, 3, 9, 3, 59, 59, 999999999, time.UTC), time.Date(2026, 3, 9, 4, 0, 0, 0, time.UTC)},
		// It falls back on 2026-11-01: that day is 25 hours.
		{"day across fall back", "{ceiling: 1, window: day, zone: America/New_York}",
			time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC), time.Date(2026, 11, 2, 4, 59, 59, 999999999, time.UTC), time.Date(2026, 11, 2, 5, 0, 0, 0, time.UTC)},
		// Berlin's March holds its spring forward; April starts at +02:00.
		{"month across a change", "{ceiling: 1, window: month, zone: Europe/Berlin}",
			time.Date(2026, 2, 28, 23, 0, 0, 0, time.UTC), time.Date(2026, 3, 31, 21, 59, 59, 999999999, time.UTC), time.Date(2026, 3, 31, 22, 0, 0, 0, time.UTC)},
		{"day in UTC by default", "{ceiling: 1, window: day}",
			time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := limitsPolicy(t, "  acme: "+tc.spec+"\n")
			ls := newLedgerSession(t, p, nil, ana)
			// A call just before the window spends in the window before.
			ls.want("echo", tc.spend.Add(-1), Allow, CheckRules, "")
			ls.want("echo", tc.spend, Allow, CheckRules, "")
			ls.want("echo", tc.last, Deny, CheckTenantBudget, "the window resets at "+tc.next.Format(time.RFC3339))
			// A call exactly at the reset is the new window's.
			ls.want("echo", tc.next, Allow, CheckRules, "")
		})
	}
}

func TestRateLimits(t *testing.T) {
	p := mustLoad(t, `version: 1
rules:
  - {id: mail, tool: send, action: allow, rate: 3/h, rate_by: tenant}
  - {id: any, tool: "*", action: allow}
tools:
  fetch: {rate: 2/m}
  "e*": {rate: 1/s}
`)
	l := NewLedger()
	a := newLedgerSession(t, p, l, ana)
	b := newLedgerSession(t, p, l, Principal{Subject: "cy", Tenant: "acme"})
	a.want("fetch", t0, Allow, CheckRules, "")
	a.want("fetch", t0.Add(10*time.Second), Allow, CheckRules, "")
	a.want("fetch", t0.Add(30*time.Second), Deny, CheckRate, `rate 2/m (contract tools.fetch) for principal "ana": 2 calls in the last minute; the next call may go at 2026-01-01T00:01:00Z`)
	// Per principal by default: another principal has slots of its own.
	b.want("fetch", t0.Add(30*time.Second), Allow, CheckRules, "")
	// A denied call took no slot; the oldest leaves exactly at t0+1m.
	a.want("fetch", t0.Add(time.Minute-1), Deny, CheckRate, "2026-01-01T00:01:00Z")
	a.want("fetch", t0.Add(time.Minute), Allow, CheckRules, "")
	a.want("fetch", t0.Add(time.Minute+1), Deny, CheckRate, "the next call may go at 2026-01-01T00:01:10Z")

	// A glob contract's rate is shared by the tools it matches.
	a.want("echo", t0, Allow, CheckRules, "")
	a.want("eval", t0.Add(time.Second/2), Deny, CheckRate, "contract tools.e*")
	// The time a refusal gives is rounded up to the second: never early.
	a.want("echo", t0.Add(10250*time.Millisecond), Allow, CheckRules, "")
	a.want("eval", t0.Add(10500*time.Millisecond), Deny, CheckRate, "the next call may go at 2026-01-01T00:00:12Z")
	a.want("eval", t0.Add(11250*time.Millisecond), Allow, CheckRules, "")

	// Per tenant: two principals of one tenant share the rule's slots.
	a.want("send", t0, Allow, CheckRules, "")
	b.want("send", t0.Add(time.Minute), Allow, CheckRules, "")
	failed := a.want("send", t0.Add(2*time.Minute), Allow, CheckRules, "")
	a.s.Failed(failed.ID, t0.Add(2*time.Minute)) // it reached the server: its slot stays taken
	b.want("send", t0.Add(3*time.Minute), Deny, CheckRate, `rate 3/h (rule mail) for tenant "acme": 3 calls in the last hour; the next call may go at 2026-01-01T01:00:00Z`)
	newLedgerSession(t, p, l, Principal{Subject: "fo", Tenant: "globex"}).want("send", t0.Add(3*time.Minute), Allow, CheckRules, "")

	// Ablation: with the check off, the same call goes.
	off, err := p.Without(OffCheck(CheckRate))
	if err != nil {
		t.Fatal(err)
	}
	c := &Call{ID: "x", ToolRef: ToolRef{Server: "srv", Tool: "fetch"}, Args: map[string]any{}}
	if d := Decide(off, a.s, c, t0.Add(time.Minute+2)); d.Verdict != Allow {
		t.Fatalf("rate off: %+v", d)
	}
	if d := Decide(p, a.s, c, t0.Add(time.Minute+2)); d.Check != CheckRate {
		t.Fatalf("rate on: %+v", d)
	}
}

// TestAnswerRechecksLimits: the human answers after the tenant spent its
// ceiling elsewhere; the approval cannot carry the call past it.
func TestAnswerRechecksLimits(t *testing.T) {
	p := limitsPolicy(t, "  acme: {ceiling: 1, window: 24h}\n")
	l := NewLedger()
	a := newLedgerSession(t, p, l, ana)
	b := newLedgerSession(t, p, l, Principal{Subject: "cy", Tenant: "acme"})
	asked := a.want("send", t0, Ask, CheckRules, "")
	b.want("echo", t0.Add(time.Second), Allow, CheckRules, "")
	g := Grant{ID: "g1", ToolRef: asked.ToolRef, Digest: asked.Digest, Approver: "bo", Approve: true, Expires: t0.Add(time.Hour)}
	d := Answer(p, a.s, asked, Decision{Verdict: Ask, Check: CheckRules, Rule: "send"}, g, t0.Add(2*time.Second))
	if d.Verdict != Deny || d.Check != CheckTenantBudget || d.Rule != "send" || d.Grant != "g1" {
		t.Fatalf("answer past the ceiling: %+v", d)
	}
	// Had nothing been spent meanwhile, the same answer allows.
	c := newLedgerSession(t, p, nil, ana)
	asked = c.want("send", t0, Ask, CheckRules, "")
	if d := Answer(p, c.s, asked, Decision{Verdict: Ask, Check: CheckRules, Rule: "send"}, g, t0.Add(time.Second)); d.Verdict != Allow {
		t.Fatalf("answer within the ceiling: %+v", d)
	}
}

func TestLimitLoadErrors(t *testing.T) {
	head := "version: 1\nrules:\n  - {id: a, tool: x, action: allow}\n"
	cases := []struct{ name, text, want string }{
		{"negative cost", head + "tools:\n  x: {cost: -1}\n", `test.yaml:5: tool "x": cost must be 0 or more, not -1`},
		{"fractional cost", head + "tools:\n  x: {cost: 1.5}\n", "test.yaml:5: cost wants a whole number, not 1.5"},
		{"fractional max_calls", head + "servers:\n  s:\n    x: {max_calls: 2.5}\n", "test.yaml:6: max_calls wants a whole number, not 2.5"},
		{"fractional ceiling", head + "tenants:\n  acme: {ceiling: 1e3, window: day}\n", "test.yaml:5: ceiling wants a whole number, not 1e3"},
		{"rate of zero", head + "tools:\n  x: {rate: 0/m}\n", `test.yaml:5: tool "x": rate "0/m" must allow 1 to 100000 calls per unit`},
		{"unknown unit", head + "tools:\n  x: {rate: 10/w}\n", `test.yaml:5: tool "x": rate "10/w" has unknown unit "w" (known: s, m, h, d)`},
		{"no count", head + "tools:\n  x: {rate: /m}\n", `test.yaml:5: tool "x": rate "/m" is not a count per unit`},
		{"rule rate of zero", "version: 1\nrules:\n  - {id: a, tool: x, action: allow, rate: 0/s}\n", `test.yaml:3: rule "a": rate "0/s" must allow`},
		{"bad rate_by", head + "tools:\n  x: {rate: 1/s, rate_by: session}\n", `test.yaml:5: tool "x": rate_by must be principal or tenant, not "session"`},
		{"rate_by alone", head + "tools:\n  x: {rate_by: tenant}\n", `test.yaml:5: tool "x": rate_by "tenant" without a rate`},
		{"server rate", head + "servers:\n  mail:\n    x: {rate: 5/y}\n", `test.yaml:6: tool "x": rate "5/y" has unknown unit`},
		{"no ceiling", head + "tenants:\n  acme: {window: 24h}\n", `test.yaml:5: tenant "acme" has no ceiling`},
		{"null tenant", head + "tenants:\n  acme:\n", `test.yaml:5: tenant "acme" has no ceiling`},
		{"negative ceiling", head + "tenants:\n  acme: {ceiling: -5, window: day}\n", `test.yaml:5: tenant "acme": ceiling must be 0 to`},
		{"no window", head + "tenants:\n  acme: {ceiling: 5}\n", `test.yaml:5: tenant "acme" has no window`},
		{"bad window", head + "tenants:\n  acme: {ceiling: 5, window: fortnight}\n", `test.yaml:5: tenant "acme": window "fortnight" is not a duration`},
		{"tiny window", head + "tenants:\n  acme: {ceiling: 5, window: 10ms}\n", `window "10ms" must be whole seconds`},
		{"unknown zone", head + "tenants:\n  acme:\n    ceiling: 5\n    window: day\n    zone: Mars/Olympus\n", `test.yaml:8: tenant "acme": unknown time zone "Mars/Olympus"`},
		{"local zone", head + "tenants:\n  acme: {ceiling: 5, window: month, zone: Local}\n", `not Local`},
		{"zone on a duration", head + "tenants:\n  acme: {ceiling: 5, window: 24h, zone: UTC}\n", `a zone applies to a day or month window`},
		{"no tenant", head + "tenants: {}\n", `test.yaml:4: tenants names no tenant`},
		{"unknown tenant key", head + "tenants:\n  acme: {ceiling: 5, window: day, limit: 3}\n", `unknown key "limit"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("test.yaml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestLimitsRoundTrip: a policy with limits is recorded in a log as its
// canonical form, and must load from it as the same policy.
func TestLimitsRoundTrip(t *testing.T) {
	p := mustLoad(t, `version: 1
rules:
  - {id: a, tool: "*", action: allow, rate: 5/m, rate_by: tenant}
tools:
  x: {cost: 0, rate: 1/s}
tenants:
  acme: {ceiling: 0, window: month, zone: Asia/Kolkata}
`)
	q := mustLoad(t, string(p.Canonical()))
	if q.Version() != p.Version() || !q.HasLimits() {
		t.Fatalf("canonical form lost the limits: %s", p.Canonical())
	}
	for _, want := range []string{`"cost":0`, `"ceiling":0`, `"rate_by":"tenant"`} {
		if !strings.Contains(string(p.Canonical()), want) {
			t.Fatalf("canonical form lacks %s: %s", want, p.Canonical())
		}
	}
	if mustLoad(t, "version: 1\nrules: []\n").HasLimits() {
		t.Fatal("a policy without limits has them")
	}
}

// TestLintLimits: a cost no ceiling counts, and a rate on a rule that
// denies everything it matches, do nothing: lint says so, and not where
// they do something.
func TestLintLimits(t *testing.T) {
	policy := `version: 1
rules:
  - {id: never, tool: delete, action: deny, rate: 5/m}
  - {id: all, tool: "*", action: allow, rate: 5/m}
tools:
  fetch: {cost: 3}
  echo: {rate: 1/s}
`
	fs, err := lintListed("p.yaml", []byte(policy), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		if f.Kind == lintCostUncounted || f.Kind == lintRateOnDeny {
			got = append(got, fmt.Sprintf("%d %s", f.Line, f.Message))
		}
	}
	want := []string{
		"3 rule never denies every call it matches: its rate 5/m never counts one",
		"6 fetch has a cost, but the policy has no tenants: no ceiling counts it",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	fs, err = lintListed("p.yaml", []byte(policy+"tenants:\n  \"*\": {ceiling: 9, window: day}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.Kind == lintCostUncounted {
			t.Fatalf("a cost under tenants: %s", f.Message)
		}
	}
}
