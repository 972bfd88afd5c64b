package audit

import (
	"errors"
	"fmt"
	"time"

	"bailiff/engine"
)

// Event is one step of a session, from wherever the session is read: a
// trace's line, an audit log's record, a request on the wire. Exactly one
// of the step fields is set. A driver only says where its events come
// from and what it observes; Driver applies them, under one set of rules.
type Event struct {
	At  time.Time
	Pos int // where it was read (a trace's line, a record's seq): errors and positions name it

	Start  *StartStep
	Call   *CallStep
	Grant  *GrantStep
	Result *ResultStep
	Tools  *ToolsBody
	End    *EndBody
}

// StartStep opens session ID as Body says.
type StartStep struct {
	ID   string
	Body *SessionBody
}

// CallStep is one tools/call.
type CallStep struct {
	Call  *engine.Call
	Label string // a trace's label for the call (attack, benign), for reports
	// Recorded is the decision a log holds for the call: it is what is
	// committed, and the engine's own is not asked for unless the driver
	// recomputes. Nil for a call the engine decides.
	Recorded *engine.Decision
	// Body is the call record written, with a log.
	Body *CallBody
}

// GrantStep is a human's answer to an asked call.
type GrantStep struct {
	Call     string // the call it answers
	ID       string
	Approver string
	Approve  bool
	Expires  time.Time // zero: the policy's approval TTL from the event's time
	// Logged marks a grant read from a log, which claims to settle its
	// call when it records the decision it settled with (Recorded). A
	// trace's grant claims to settle its call when it follows it, with
	// no other call between.
	Logged   bool
	Recorded *engine.Decision
	// Body is the grant record written, with a log.
	Body *GrantBody
}

// ResultStep is what came back for a call, as Body records it, with Out
// its output (nil for none).
type ResultStep struct {
	Body *ResultBody
	Out  *Output
}

// Observer is told each step as the driver takes it, as OPA's query
// tracer is told each step of an evaluation: printing, recording,
// comparing and verifying are observers of one loop. A step's hook comes
// before the step is committed to the session, so an observer deciding
// on the same history (a candidate policy) sees the state the call was
// decided on; an error from a hook stops the drive.
type Observer interface {
	// Started is told a session has started.
	Started(s *Session, ev *Event) error
	// Called is told the decision the engine made on a call (the zero
	// Decision when it was not asked: a recorded call, not recomputed)
	// and the decision committed.
	Called(s *Session, ev *Event, decided, committed engine.Decision) error
	// Granted is told a grant: settling its call pc with decided (the
	// engine's answer, zero when not asked) and committed, or, when
	// settles is false, kept for a later identical call.
	Granted(s *Session, ev *Event, pc *Pending, g engine.Grant, settles bool, decided, committed engine.Decision) error
	// Resulted is told what a call brought, once the session has it.
	Resulted(s *Session, ev *Event, src engine.Source) error
	// ToolsListed is told a tools record, once applied.
	ToolsListed(s *Session, ev *Event) error
	// Ended is told a session ended, before it is closed.
	Ended(s *Session, ev *Event) error
}

// Preparer is an observer that fills in what a log is written before a
// step is taken: the recorder's bodies, keyed digests and signatures.
// The grant it is given carries the call's server, tool and digest.
type Preparer interface {
	Prepare(s *Session, ev *Event, g *engine.Grant) error
}

// StepError is an event the session's rules refuse: a session that
// starts before the last ended, an event before any start, a call id
// used twice, an answer or result for a call never made.
type StepError struct {
	Pos    int
	Reason string
}

func (e *StepError) Error() string { return e.Reason }

// Driver walks the sessions of one stream of events, one after another,
// under the rules every driver shares. Config says what the sessions are
// decided under and where their records go.
type Driver struct {
	Config Config
	// Recompute has the engine decide recorded calls and grants too, for
	// an observer that compares the two.
	Recompute bool
	Observer  Observer

	s    *Session
	last string // the id of the session's last call: a trace's grant right after it answers it
}

// Session is the session being driven, nil between sessions.
func (d *Driver) Session() *Session { return d.s }

// Close closes a session that did not end and gives back its spill.
func (d *Driver) Close() {
	if d.s != nil {
		d.s.Close()
		d.s = nil
	}
}

// Drive takes every event in turn; the first error stops it.
func (d *Driver) Drive(events []Event) error {
	for i := range events {
		if err := d.Step(&events[i]); err != nil {
			return err
		}
	}
	return nil
}

func refuse(ev *Event, format string, a ...any) error {
	return &StepError{Pos: ev.Pos, Reason: fmt.Sprintf(format, a...)}
}

// Step takes one event.
func (d *Driver) Step(ev *Event) error {
	if ev.Start != nil {
		if d.s != nil {
			return refuse(ev, "session %q starts before session %q ended", ev.Start.ID, d.s.ID())
		}
		return d.start(ev)
	}
	s := d.s
	if s == nil {
		return refuse(ev, "event before any start")
	}
	if ev.Call != nil && s.Made(ev.Call.Call.ID) {
		return refuse(ev, "call id %q used twice in session %q", ev.Call.Call.ID, s.ID())
	}
	if p, ok := d.Observer.(Preparer); ok && ev.Grant == nil {
		if err := p.Prepare(s, ev, nil); err != nil {
			return err
		}
	}
	switch {
	case ev.Call != nil:
		return d.call(s, ev)
	case ev.Grant != nil:
		return d.grant(s, ev)
	case ev.Result != nil:
		src, err := s.Result(ev.At, ev.Pos, ev.Result.Body, ev.Result.Out)
		if err != nil {
			return refuse(ev, "output %v", err)
		}
		return d.Observer.Resulted(s, ev, src)
	case ev.Tools != nil:
		err := s.Tools(ev.At, ev.Tools)
		if errors.Is(err, ErrAcceptRefused) && s.log == nil {
			// Read back, an acceptance the session may not take is
			// history: it is not applied, and verify reports it.
			err = nil
		}
		if err != nil {
			return err
		}
		return d.Observer.ToolsListed(s, ev)
	case ev.End != nil:
		err := d.Observer.Ended(s, ev)
		d.s = nil
		if eerr := s.End(ev.At, ev.End); err == nil {
			err = eerr
		}
		return err
	}
	return nil
}

func (d *Driver) start(ev *Event) error {
	if p, ok := d.Observer.(Preparer); ok {
		if err := p.Prepare(nil, ev, nil); err != nil {
			return err
		}
	}
	s, err := Start(d.Config, ev.At, ev.Start.ID, ev.Start.Body)
	if err != nil {
		return err
	}
	d.s, d.last = s, ""
	return d.Observer.Started(s, ev)
}

func (d *Driver) call(s *Session, ev *Event) error {
	c := ev.Call.Call
	if c.Server == "" {
		c.Server = s.State().Server
	}
	var decided engine.Decision
	if ev.Call.Recorded == nil || d.Recompute {
		decided = s.Decide(c, ev.At)
		if err := s.Err(); err != nil {
			return err // the decision may rest on output that could not be read back
		}
	}
	committed := decided
	if ev.Call.Recorded != nil {
		committed = *ev.Call.Recorded
	}
	if err := d.Observer.Called(s, ev, decided, committed); err != nil {
		return err
	}
	d.last = c.ID
	_, err := s.Call(ev.At, c, committed, ev.Call.Body)
	return err
}

// grant applies the one rule for answers: a grant settles its call when
// it claims to (a log's that recorded a decision, a trace's right after
// its call) and the call is waiting for an answer; otherwise it is kept
// for a later identical call.
func (d *Driver) grant(s *Session, ev *Event) error {
	gs := ev.Grant
	pc, err := s.Lookup(gs.Call)
	if err != nil {
		return refuse(ev, "grant %v", err)
	}
	g := grantFor(s, pc, gs, ev.At)
	if p, ok := d.Observer.(Preparer); ok {
		if err := p.Prepare(s, ev, &g); err != nil {
			return err
		}
	}
	claims := gs.Recorded != nil
	if !gs.Logged {
		claims = gs.Call == d.last
	}
	settles := claims && pc.answerable()
	if !settles {
		if err := d.Observer.Granted(s, ev, pc, g, false, engine.Decision{}, engine.Decision{}); err != nil {
			return err
		}
		return s.Grant(ev.At, g, gs.Body)
	}
	var decided engine.Decision
	if gs.Recorded == nil || d.Recompute {
		decided, _ = s.Answer(pc, g, ev.At)
	}
	committed := decided
	if gs.Recorded != nil {
		committed = *gs.Recorded
	}
	if err := d.Observer.Granted(s, ev, pc, g, true, decided, committed); err != nil {
		return err
	}
	return s.Settle(ev.At, pc, committed, gs.Body)
}

// grantFor is the grant a step gives: bound to its call's server, tool
// and digest, and expiring, unless it says when, the policy's approval
// TTL after it is given.
func grantFor(s *Session, pc *Pending, gs *GrantStep, now time.Time) engine.Grant {
	exp := gs.Expires
	if exp.IsZero() {
		exp = now.Add(s.Policy().ApprovalTTL())
	}
	c := pc.Call()
	server := c.Server
	if server == "" {
		server = s.State().Server
	}
	return engine.Grant{ID: gs.ID, Server: server, Tool: c.Tool, Digest: c.Digest,
		Approver: gs.Approver, Approve: gs.Approve, Expires: exp}
}
