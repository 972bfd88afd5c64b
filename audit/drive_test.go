package audit

import (
	"errors"
	"strings"
	"testing"
	"time"

	"bailiff/engine"
)

// tally is an observer that keeps what it was told.
type tally struct {
	decided  []engine.Verdict
	settled  map[string]engine.Verdict
	kept     []string
	sessions []string
	fail     error
}

func (o *tally) Started(s *Session, _ *Event) error {
	o.sessions = append(o.sessions, s.ID())
	return nil
}
func (o *tally) Called(_ *Session, _ *Event, d, _ engine.Decision) error {
	o.decided = append(o.decided, d.Verdict)
	return o.fail
}
func (o *tally) Granted(_ *Session, _ *Event, pc *Pending, g engine.Grant, settles bool, _, d engine.Decision) error {
	if settles {
		o.settled[pc.Call().ID] = d.Verdict
	} else {
		o.kept = append(o.kept, g.ID)
	}
	return nil
}
func (o *tally) Resulted(*Session, *Event, engine.Source) error { return nil }
func (o *tally) ToolsListed(*Session, *Event, bool) error       { return nil }
func (o *tally) Ended(*Session, *Event) error                   { return nil }

func driver(t *testing.T) (*Driver, *tally) {
	t.Helper()
	p, err := engine.Load("p", []byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	o := &tally{settled: map[string]engine.Verdict{}}
	return &Driver{Config: Config{Policy: p}, Observer: o}, o
}

type steps []Event

// drive takes every event in turn; the first error stops it.
func drive(d *Driver, events []Event) error {
	for i := range events {
		if err := d.Step(&events[i]); err != nil {
			return err
		}
	}
	return nil
}

func (ss *steps) add(ev Event) {
	ev.Pos = len(*ss) + 1
	ev.At = t0.Add(time.Duration(ev.Pos) * time.Second)
	*ss = append(*ss, ev)
}

func startStep(id string) Event {
	return Event{Start: &StartStep{ID: id, Body: &SessionBody{Server: "srv", Principal: engine.Principal{Subject: "ana"},
		Tools: []engine.ToolDef{{Name: "send"}, {Name: "pay"}}}}}
}

func callStep(id, tool string) Event {
	c := call(id, tool)
	c.Server = "" // resolved by the driver, once
	return Event{Call: &CallStep{Call: c}}
}

func grantStep(id, callID string) Event {
	return Event{Grant: &GrantStep{ID: id, Call: callID, Approver: "lee", Approve: true}}
}

// TestDriverRules: the rules every driver shares, each refused with the
// event's position.
func TestDriverRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  func(*steps)
		pos  int
		want string
	}{
		{"event before start", func(s *steps) { s.add(callStep("c1", "send")) }, 1, "event before any start"},
		{"start before end", func(s *steps) { s.add(startStep("a")); s.add(startStep("b")) }, 2, `session "b" starts before session "a" ended`},
		{"id reused", func(s *steps) { s.add(startStep("a")); s.add(callStep("c1", "pay")); s.add(callStep("c1", "send")) }, 3,
			`call id "c1" used twice in session "a"`},
		{"grant for no call", func(s *steps) { s.add(startStep("a")); s.add(grantStep("g", "nope")) }, 2,
			`grant answers call "nope", which session "a" has not made`},
		{"result for no call", func(s *steps) {
			s.add(startStep("a"))
			s.add(Event{Result: &ResultStep{Body: &ResultBody{Call: "nope", Status: StatusOK}}})
		}, 2, `output answers call "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := driver(t)
			defer d.Close()
			var ss steps
			tc.evs(&ss)
			err := drive(d, ss)
			var se *StepError
			if !errors.As(err, &se) || se.Pos != tc.pos || !strings.Contains(se.Error(), tc.want) {
				t.Fatalf("got %v, want a step error at %d containing %q", err, tc.pos, tc.want)
			}
		})
	}
}

// TestDriverSettlesByOneRule: a trace's grant settles the ask it follows
// and is kept when another call came between; a log's grant settles when
// it recorded a decision, whatever came between; a settled ask takes no
// second answer.
func TestDriverSettlesByOneRule(t *testing.T) {
	d, o := driver(t)
	defer d.Close()
	var ss steps
	ss.add(startStep("a"))
	ss.add(callStep("c1", "pay"))
	ss.add(grantStep("g1", "c1")) // right after: settles
	ss.add(grantStep("g2", "c1")) // settled already: kept
	ss.add(callStep("c2", "pay"))
	ss.add(callStep("c3", "send"))
	ss.add(grantStep("g3", "c2")) // a call came between: kept
	ss.add(callStep("c4", "pay"))
	ss.add(callStep("c5", "send"))
	declined := engine.Decision{Verdict: engine.Deny, Check: engine.CheckApproval}
	logged := grantStep("g4", "c4")
	logged.Grant.Logged, logged.Grant.Settled, logged.Grant.Recorded = true, true, &declined
	ss.add(logged) // a log's answer, recorded: settles as recorded
	ss.add(callStep("c6", "pay"))
	ss.add(callStep("c7", "send"))
	decided := grantStep("g5", "c6")
	decided.Grant.Logged, decided.Grant.Settled = true, true
	decided.Grant.Tool, decided.Grant.Digest = engine.ToolRef{Server: "srv", Tool: "pay"}, call("c6", "pay").Digest
	decided.Grant.Expires = t0.Add(time.Hour)
	ss.add(decided) // a log's answer whose decision the reader dropped: settles as the engine decides
	ss.add(Event{End: &EndBody{}})
	if err := drive(d, ss); err != nil {
		t.Fatal(err)
	}
	if o.settled["c1"] != engine.Allow || o.settled["c4"] != engine.Deny || o.settled["c6"] != engine.Allow || len(o.settled) != 3 {
		t.Errorf("settled %v, want c1 allow, c4 deny (as recorded) and c6 allow (as the engine decides)", o.settled)
	}
	if strings.Join(o.kept, " ") != "g2 g3" {
		t.Errorf("kept %v, want g2 g3", o.kept)
	}
	if d.Session("a") != nil {
		t.Error("the session is still open after its end")
	}
}

// TestDriverUnevaluableAskIsNotSettled: an ask that rests on redacted
// arguments is not known to be an ask, so no grant settles it.
func TestDriverUnevaluableAskIsNotSettled(t *testing.T) {
	p, err := engine.Load("p", []byte(`version: 1
rules:
  - {id: pay, tool: pay, action: ask, when: [{arg: amount, equals: big}]}
  - {id: rest, tool: pay, action: allow}
`))
	if err != nil {
		t.Fatal(err)
	}
	o := &tally{settled: map[string]engine.Verdict{}}
	d := &Driver{Config: Config{Policy: p}, Observer: o}
	defer d.Close()
	var ss steps
	ss.add(startStep("a"))
	c := callStep("c1", "pay")
	amount, err := engine.ParsePath("amount")
	if err != nil {
		t.Fatal(err)
	}
	c.Call.Call.Redacted = []engine.Path{amount}
	ss.add(c)
	ss.add(grantStep("g1", "c1"))
	if err := drive(d, ss); err != nil {
		t.Fatal(err)
	}
	if len(o.settled) != 0 || len(o.kept) != 1 {
		t.Errorf("settled %v kept %v: an unevaluable ask was settled", o.settled, o.kept)
	}
	// A log's grant that says it settled the ask settles it, whatever the
	// reader recomputes of the ask: the gateway settled it, and a grant
	// kept instead would be one the log says was spent.
	c2 := callStep("c2", "pay")
	c2.Call.Call.Redacted = []engine.Path{amount}
	logged := grantStep("g2", "c2")
	logged.Grant.Logged, logged.Grant.Settled = true, true
	if err := drive(d, []Event{c2, logged}); err != nil {
		t.Fatal(err)
	}
	if _, ok := o.settled["c2"]; !ok {
		t.Errorf("a log's settling grant on an ask recomputed unevaluable was kept (%v), not settled", o.kept)
	}
}

// TestDriverObserverStops: an observer's error stops the drive, and the
// call it was told of is not committed.
func TestDriverObserverStops(t *testing.T) {
	d, o := driver(t)
	defer d.Close()
	o.fail = errors.New("observer broke")
	var ss steps
	ss.add(startStep("a"))
	ss.add(callStep("c1", "send"))
	if err := drive(d, ss); err != o.fail {
		t.Fatalf("got %v, want the observer's error", err)
	}
	if d.Session("a").Made("c1") {
		t.Error("a call was committed after its observer failed")
	}
}

// TestDriverLogRules: a log's sessions interleave, each record naming
// its own; a session starts once, and no record comes before its start
// or after its end. A session started unjudged takes its records, and
// judges none.
func TestDriverLogRules(t *testing.T) {
	d, o := driver(t)
	d.Interleaved = true
	defer d.Close()
	var ss steps
	of := func(session string, ev Event) Event {
		ev.Session = session
		if ev.Start != nil {
			ev.Start.ID = session
		}
		return ev
	}
	ss.add(of("a", startStep("")))
	ss.add(of("b", startStep("")))
	ss.add(of("a", callStep("c1", "pay")))
	ss.add(of("b", callStep("c1", "send")))                                       // the same id in another session
	ss.add(of("a", Event{Grant: &GrantStep{ID: "g1", Call: "c1", Logged: true}})) // no decision recorded: kept
	ss.add(of("a", Event{End: &EndBody{}}))
	ss.add(of("x", Event{Start: &StartStep{Unjudged: true}}))
	if err := drive(d, ss); err != nil {
		t.Fatal(err)
	}
	if len(o.decided) != 2 || len(o.kept) != 1 || d.Session("b") == nil || d.Session("a") != nil {
		t.Fatalf("decided %v kept %v: the sessions did not interleave", o.decided, o.kept)
	}
	for _, tc := range []struct {
		ev   Event
		want string
	}{
		{of("b", startStep("")), `session "b" starts twice`},
		{of("z", callStep("c9", "send")), `call record for session "z", which has no session record before it`},
		{of("a", callStep("c9", "send")), `call record after session "a" ended`},
	} {
		err := d.Step(&tc.ev)
		var se *StepError
		if !errors.As(err, &se) || se.Error() != tc.want {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	if err := d.Step(&Event{Session: "x", Call: callStep("c1", "send").Call}); err != ErrUnjudged {
		t.Errorf("a call of an unjudged session: %v, want ErrUnjudged", err)
	}
}

// TestDriverRefusesAnEmptyEvent: an event that holds no step is refused,
// and is not read as the end of its session.
func TestDriverRefusesAnEmptyEvent(t *testing.T) {
	d, _ := driver(t)
	defer d.Close()
	var ss steps
	ss.add(startStep("a"))
	ss.add(Event{})
	err := drive(d, ss)
	var se *StepError
	if !errors.As(err, &se) || se.Pos != 2 || !strings.Contains(se.Error(), "no step") {
		t.Fatalf("an empty event: %v, want a step error at 2", err)
	}
	if d.Session("a") == nil {
		t.Error("an empty event ended its session")
	}
}
