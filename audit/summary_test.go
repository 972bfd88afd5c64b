package audit

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"bailiff/chain"
	"bailiff/engine"
)

func addLog(t *testing.T, s *Summary, name, file string) (LogRead, error) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return s.Add(name, f, chain.OpenEvidence(chain.EvidenceDir(file)))
}

// TestSummary: an answered ask counts by its answer, each tool keeps its
// session's server, and one session in two logs is refused.
func TestSummary(t *testing.T) {
	const mail = "../fixtures/chain/good_mail.jsonl"
	s := NewSummary(time.Time{}, time.Time{})
	read, err := addLog(t, s, "a", mail)
	if err != nil || read.Err != nil || !read.HasOutput {
		t.Fatalf("Add = %+v, %v", read, err)
	}
	if s.Sessions != 2 || s.Calls != 10 {
		t.Errorf("sessions %d, calls %d; want 2, 10", s.Sessions, s.Calls)
	}
	if got, want := s.ByTool["send_email"], map[string]int{"allow": 2, "deny": 2, "ask": 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("send_email verdicts = %v, want %v", got, want)
	}
	// c4 and c5 are settled in band; d1 is approved out of band (d3 is
	// its retry, allowed on the grant); d4 asks again and is never
	// answered.
	if got, want := s.Asks, map[string]int{"approved": 2, "declined": 1, "unanswered": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("asks = %v, want %v", got, want)
	}
	if got := s.ToolServers["send_email"]; !reflect.DeepEqual(got, map[string]bool{"mail": true}) {
		t.Errorf("send_email servers = %v, want mail", got)
	}
	if _, ok := s.Policies[s.LastPolicy]; !ok || len(s.Policies) != 1 {
		t.Errorf("last policy %q not among %d policies", s.LastPolicy, len(s.Policies))
	}
	if _, err := addLog(t, s, "b", mail); err == nil || !strings.Contains(err.Error(), "is in both a and b") {
		t.Errorf("the same sessions in a second log: err = %v", err)
	}
}

// TestSummaryOutOfRange: sessions outside the period are read, not
// described.
func TestSummaryOutOfRange(t *testing.T) {
	s := NewSummary(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{})
	if _, err := addLog(t, s, "a", "../fixtures/chain/good_mail.jsonl"); err != nil {
		t.Fatal(err)
	}
	if s.Read != 2 || s.Sessions != 0 || s.Calls != 0 || len(s.Policies) != 0 || s.SpanFirst.IsZero() {
		t.Errorf("read %d, sessions %d, calls %d, policies %d, span from %v", s.Read, s.Sessions, s.Calls, len(s.Policies), s.SpanFirst)
	}
}

// TestSummaryFixed: the summary keeps which argument paths each tool's
// pinned schema fixes, under the tool's own name in a gateway session.
func TestSummaryFixed(t *testing.T) {
	pol, err := engine.Load("p.yaml", []byte("version: 1\nrules: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := NewSummary(time.Time{}, time.Time{})
	fixed := map[string][]string{"channel": {"a"}, "cc[*]": {"b"}}
	allow := engine.Decision{Verdict: engine.Allow, Check: engine.CheckRules}
	err = s.session(LogSession{Policy: pol, Events: []Event{
		{Start: &StartStep{ID: "s", Body: &SessionBody{Server: "gateway", Tools: []engine.ToolDef{{Name: "shop.refund", Fixed: fixed}, {Name: "mail.send"}}}}},
		{Call: &CallStep{Call: &engine.Call{ID: "c", ToolRef: engine.ToolRef{Server: "shop", Tool: "refund"}}, Recorded: &allow}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Fixed["refund"]["shop"]; !reflect.DeepEqual(got, fixed) {
		t.Errorf("fixed paths of refund: %v", got)
	}
	if _, ok := s.Fixed["send"]; ok {
		t.Errorf("send fixes nothing, yet %v", s.Fixed["send"])
	}
}

// TestSummaryOutOfBandAnswer: an ask answered with bailiff approve is
// answered, though no call record settles it: the asked call stays held
// and its retry goes through on the grant. It was counted unanswered,
// with a finding that said no human had answered.
func TestSummaryOutOfBandAnswer(t *testing.T) {
	at := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	ask := engine.Decision{Verdict: engine.Ask, Check: engine.CheckRules, Rule: "send-asks"}
	allow := engine.Decision{Verdict: engine.Allow, Check: engine.CheckApproval, Rule: "send-asks", Grant: "g1"}
	pol, err := engine.Load("p.yaml", []byte("version: 1\nrules: [{id: send-asks, tool: send, action: ask}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	start := Event{At: at, Start: &StartStep{ID: "s", Body: &SessionBody{Server: "mail", Tools: []engine.ToolDef{{Name: "send"}}}}}
	drive := func(s *Summary, events []Event) {
		t.Helper()
		if err := s.events(pol, "mail", append([]Event{start}, events...)); err != nil {
			t.Fatal(err)
		}
	}
	for _, approve := range []bool{true, false} {
		s := NewSummary(time.Time{}, time.Time{})
		drive(s, []Event{
			{At: at, Call: &CallStep{Call: &engine.Call{ID: "c1", ToolRef: engine.ToolRef{Tool: "send"}}, Recorded: &ask}},
			{At: at.Add(time.Second), Grant: &GrantStep{ID: "g1", Call: "c1", Approve: approve, Logged: true, Expires: at.Add(time.Hour)}},
			{At: at.Add(2 * time.Second), Call: &CallStep{Call: &engine.Call{ID: "c2", ToolRef: engine.ToolRef{Tool: "send"}}, Recorded: &allow}},
		})
		want := map[string]int{"approved": 1, "unanswered": 0}
		if !approve {
			want = map[string]int{"declined": 1, "unanswered": 0}
		}
		if !reflect.DeepEqual(s.Asks, want) {
			t.Errorf("approve %v: asks = %v, want %v", approve, s.Asks, want)
		}
		if got := s.ByTool["send"]; got["ask"] != 0 || got[Answered] != 1 || got["allow"] != 1 {
			t.Errorf("approve %v: the held call (answered) and its retry (allowed): %v", approve, got)
		}
	}
	// The last answer counts (a decline, then an approval the retry
	// used), and one recorded after its expiry approves nothing.
	for name, c := range map[string]struct {
		grants []GrantStep
		want   map[string]int
	}{
		"declined, then approved": {[]GrantStep{{ID: "g0", Call: "c1", Approve: false}, {ID: "g1", Call: "c1", Approve: true}}, map[string]int{"approved": 1, "unanswered": 0}},
		"approved after expiry":   {[]GrantStep{{ID: "g1", Call: "c1", Approve: true, Expires: at}}, map[string]int{"declined": 1, "unanswered": 0}},
	} {
		events := []Event{{At: at, Call: &CallStep{Call: &engine.Call{ID: "c1", ToolRef: engine.ToolRef{Tool: "send"}}, Recorded: &ask}}}
		for i := range c.grants {
			g := c.grants[i]
			if g.Expires.IsZero() {
				g.Expires = at.Add(time.Hour)
			}
			g.Logged = true
			events = append(events, Event{At: at.Add(time.Duration(i+1) * time.Second), Grant: &g})
		}
		s := NewSummary(time.Time{}, time.Time{})
		drive(s, events)
		if !reflect.DeepEqual(s.Asks, c.want) {
			t.Errorf("%s: asks = %v, want %v", name, s.Asks, c.want)
		}
	}
}

// TestSummaryAsksOneTruth: every count of asks comes from one pass, so
// the charts' series (by tool, by day, over time) and the ask counts
// agree, whichever way each ask ended: settled in band (approved,
// declined), answered out of band (approved, declined, approved after
// its expiry), or never answered. A call answered out of band was drawn
// as "asked, never answered" while the counts said approved.
func TestSummaryAsksOneTruth(t *testing.T) {
	at := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	ask := engine.Decision{Verdict: engine.Ask, Check: engine.CheckRules, Rule: "send-asks"}
	pol, err := engine.Load("p.yaml", []byte("version: 1\nrules: [{id: send-asks, tool: send, action: ask}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	events := []Event{{At: at, Start: &StartStep{ID: "s", Body: &SessionBody{Server: "mail", Tools: []engine.ToolDef{{Name: "send"}}}}}}
	n := 0
	next := func() time.Time { n++; return at.Add(time.Duration(n) * time.Minute) }
	call := func(id string) {
		events = append(events, Event{At: next(), Call: &CallStep{Call: &engine.Call{ID: id, ToolRef: engine.ToolRef{Tool: "send"}}, Recorded: &ask}})
	}
	answer := func(id string, approve, inBand bool, expires time.Time) {
		g := &GrantStep{ID: "g-" + id, Call: id, Approve: approve, Logged: true, Approver: "ana", Expires: expires}
		if inBand {
			d := engine.Decision{Verdict: engine.Deny, Check: engine.CheckApproval, Rule: "send-asks", Grant: g.ID}
			if approve {
				d.Verdict = engine.Allow
			}
			g.Settled, g.Recorded = true, &d
		}
		events = append(events, Event{At: next(), Grant: g})
	}
	later := at.Add(24 * time.Hour)
	call("in-yes")
	answer("in-yes", true, true, later)
	call("in-no")
	answer("in-no", false, true, later)
	call("oob-yes")
	answer("oob-yes", true, false, later)
	call("oob-no")
	answer("oob-no", false, false, later)
	call("oob-late")
	answer("oob-late", true, false, at) // expired before it was recorded
	call("never")
	s := NewSummary(time.Time{}, time.Time{})
	if err := s.events(pol, "mail", events); err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"approved": 2, "declined": 3, "unanswered": 1}; !reflect.DeepEqual(s.Asks, want) {
		t.Errorf("asks = %v, want %v", s.Asks, want)
	}
	want := map[string]int{"allow": 1, "deny": 1, Answered: 3, "ask": 1}
	// The calls listing says the same of each call.
	rows, err := listSession("log", LogSession{Policy: pol, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	listed, answers := map[string]int{}, map[string]int{}
	for _, r := range rows {
		listed[r.Verdict]++
		if r.Answer == "" {
			answers["unanswered"]++
		} else {
			answers[r.Answer]++
		}
	}
	if !reflect.DeepEqual(listed, want) || !reflect.DeepEqual(answers, s.Asks) {
		t.Errorf("calls listing: verdicts %v, answers %v; summary: %v, %v", listed, answers, want, s.Asks)
	}
	_, _, over := s.Over.Finest()
	totals := map[string]map[string]int{"by tool": s.ByTool["send"], "by day": s.ByDay["2026-11-03"], "over time": {}}
	for _, m := range over {
		for v, k := range m {
			totals["over time"][v] += k
		}
	}
	for name, got := range totals {
		for v, k := range want {
			if got[v] != k {
				t.Errorf("%s: %s = %d, want %d (all: %v)", name, v, got[v], k, got)
			}
		}
	}
	// The ask counts are the series: what was settled in band is in
	// allow and deny, what was answered out of band is Answered, and what
	// no one answered is ask.
	if got := s.Asks["approved"] + s.Asks["declined"]; got != s.Settled+s.ByTool["send"][Answered] {
		t.Errorf("%d asks answered, but %d settled and %d answered out of band", got, s.Settled, s.ByTool["send"][Answered])
	}
	if s.Asks["unanswered"] != s.ByTool["send"]["ask"] {
		t.Errorf("%d unanswered, but %d drawn as never answered", s.Asks["unanswered"], s.ByTool["send"]["ask"])
	}
}

// TestSummaryRefusesWhatTheDriverRefuses: a session the driver cannot
// take to its end (a call id used twice) is not counted as if it were
// whole: the summary says so.
func TestSummaryRefusesWhatTheDriverRefuses(t *testing.T) {
	pol, err := engine.Load("p.yaml", []byte("version: 1\nrules: [{id: send, tool: send, action: allow}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	allow := engine.Decision{Verdict: engine.Allow, Check: engine.CheckRules, Rule: "send"}
	call := func() Event {
		return Event{Pos: 2, Call: &CallStep{Call: &engine.Call{ID: "c1", ToolRef: engine.ToolRef{Tool: "send"}}, Recorded: &allow}}
	}
	s := NewSummary(time.Time{}, time.Time{})
	err = s.session(LogSession{Policy: pol, Events: []Event{
		{Pos: 1, Start: &StartStep{ID: "s", Body: &SessionBody{Server: "mail", Tools: []engine.ToolDef{{Name: "send"}}}}},
		call(), call(),
	}})
	if err == nil || !strings.Contains(err.Error(), "used twice") {
		t.Errorf("a call id used twice: %v, want the driver's refusal", err)
	}
}
