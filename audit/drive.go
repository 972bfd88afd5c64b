package audit

import (
	"errors"
	"fmt"
	"time"

	"bailiff/engine"
)

// StepError is an event the session's rules refuse: a session that
// starts before the last ended (or twice), an event before its session
// starts or after it ended, a call id used twice, an answer or result for
// a call never made. Step names the step refused ("grant", "output")
// when it is one of a call's, for a reader that words it its own way.
type StepError struct {
	Pos    int
	Step   string
	Reason string
}

func (e *StepError) Error() string {
	if e.Step != "" {
		return e.Step + " " + e.Reason
	}
	return e.Reason
}

// ErrUnjudged is a step of a session started Unjudged: it is its
// session's, and no rule takes it.
var ErrUnjudged = errors.New("the session is not judged")

// Driver walks the sessions of one stream of events under the rules
// every driver shares. Config says what the sessions are decided under
// and where their records go.
type Driver struct {
	Config Config
	// Recompute has the engine decide recorded calls and grants too, for
	// an observer that compares the two.
	Recompute bool
	// Interleaved reads an audit log, whose sessions' records interleave
	// and each name their session; a trace's sessions come one after
	// another.
	Interleaved bool
	Observer    Observer

	cur      *driven            // the session a trace is in
	sessions map[string]*driven // a log's, ended ones kept to refuse records after the end
}

// driven is one session being driven.
type driven struct {
	id       string
	s        *Session
	last     string // the id of its last call: a trace's grant right after it answers it
	ended    bool
	unjudged bool
}

// Session is the session being driven: a trace's current one, or a
// log's session id (nil when it is not open).
func (d *Driver) Session(id string) *Session {
	dv := d.cur
	if d.Interleaved {
		dv = d.sessions[id]
	}
	if dv == nil {
		return nil
	}
	return dv.s
}

// Close closes the sessions that did not end and gives back their spill.
func (d *Driver) Close() {
	if d.cur != nil && d.cur.s != nil {
		d.cur.s.Close()
	}
	d.cur = nil
	for _, dv := range d.sessions {
		if dv.s != nil {
			dv.s.Close()
			dv.s = nil
		}
	}
}

func refuse(ev *Event, format string, a ...any) error {
	return &StepError{Pos: ev.Pos, Reason: fmt.Sprintf(format, a...)}
}

// kind names an event's step as a log's record kind.
func (ev *Event) kind() string {
	switch {
	case ev.Start != nil:
		return "session"
	case ev.Call != nil:
		return "call"
	case ev.Grant != nil:
		return "grant"
	case ev.Result != nil:
		return "result"
	case ev.Tools != nil:
		return "tools"
	case ev.End != nil:
		return "end"
	}
	return ""
}

// route finds the session an event is of, nil for a start, under the
// rules for where a session's events may come.
func (d *Driver) route(ev *Event) (*driven, error) {
	if !d.Interleaved {
		switch {
		case ev.Start != nil && d.cur != nil:
			return nil, refuse(ev, "session %q starts before session %q ended", ev.Start.ID, d.cur.id)
		case ev.Start == nil && d.cur == nil:
			return nil, refuse(ev, "event before any start")
		case ev.Start == nil && d.cur.unjudged:
			return nil, ErrUnjudged
		}
		return d.cur, nil
	}
	dv := d.sessions[ev.Session]
	if err := logRule(ev, dv != nil && !dv.ended, dv != nil && dv.ended); err != nil {
		return nil, err
	}
	if dv != nil && dv.unjudged {
		return nil, ErrUnjudged
	}
	return dv, nil
}

// logRule is where an audit log's records may come: a session starts
// once, and no record of it comes before its start or after its end.
func logRule(ev *Event, started, ended bool) error {
	switch {
	case ev.Start != nil && (started || ended):
		return refuse(ev, "session %q starts twice", ev.Session)
	case ev.Start != nil:
		return nil
	case ended:
		return refuse(ev, "%s record after session %q ended", ev.kind(), ev.Session)
	case !started:
		return refuse(ev, "%s record for session %q, which has no session record before it", ev.kind(), ev.Session)
	}
	return nil
}

// Check tells whether the rules let ev be taken now, without taking it:
// a reader that counts or reports records by their session asks first.
func (d *Driver) Check(ev *Event) error {
	_, err := d.route(ev)
	return err
}

// Step takes one event. ErrUnsaved says it was taken, but the shared
// counters did not keep what it changed: its decision stands in the log
// and must not be acted on.
func (d *Driver) Step(ev *Event) (err error) {
	if ev.kind() == "" {
		// An event that is no step is no end either: it changes nothing.
		return refuse(ev, "the event holds no step")
	}
	dv, err := d.route(ev)
	if err != nil {
		return err
	}
	if ev.Start != nil {
		return d.start(ev)
	}
	s := dv.s
	if l := d.Config.Ledger; l != nil && ev.counts(s) && s.p.HasLimits() {
		at, herr := l.hold(ev.At, d.Config.Log != nil, ev.Result == nil)
		if herr != nil {
			return herr
		}
		ev.At = at
		defer func() {
			if rerr := l.release(); rerr != nil && err == nil && ev.Result == nil {
				err = rerr
			}
		}()
	}
	if ev.Call != nil && s.Made(ev.Call.Call.ID) {
		return refuse(ev, "%s", reusedID(s.ID(), ev.Call.Call.ID))
	}
	if p, ok := d.Observer.(Preparer); ok && ev.Grant == nil {
		if err := p.Prepare(s, ev, nil); err != nil {
			return err
		}
	}
	switch {
	case ev.Call != nil:
		return d.call(dv, ev)
	case ev.Grant != nil:
		return d.grant(dv, ev)
	case ev.Result != nil:
		src, err := s.Result(ev.At, ev.Pos, ev.Result.Body, ev.Result.Out)
		if err != nil {
			return &StepError{Pos: ev.Pos, Step: "output", Reason: err.Error()}
		}
		return d.Observer.Resulted(s, ev, src)
	case ev.Tools != nil:
		err := s.Tools(ev.At, ev.Tools)
		refused := errors.Is(err, errAcceptRefused) && s.log == nil
		if refused {
			// Read back, an acceptance the session may not take is
			// history: it is not applied, and the observer is told.
			err = nil
		}
		if err != nil {
			return err
		}
		return d.Observer.ToolsListed(s, ev, refused)
	}
	return d.end(dv, ev)
}

func (d *Driver) start(ev *Event) error {
	st := ev.Start
	if d.Interleaved && d.sessions == nil {
		d.sessions = map[string]*driven{}
	}
	if st.Unjudged {
		d.enter(st.ID, &driven{id: st.ID, unjudged: true})
		return nil
	}
	if p, ok := d.Observer.(Preparer); ok {
		if err := p.Prepare(nil, ev, nil); err != nil {
			return err
		}
	}
	if d.Config.Ledger == nil {
		// The driver's sessions count together: one stream of events
		// is one gateway's, or one trace's, history.
		d.Config.Ledger = NewLedger()
	}
	cfg := d.Config
	if st.Policy != nil {
		cfg.Policy = st.Policy
	}
	s, err := Start(cfg, ev.At, st.ID, st.Body)
	if err != nil {
		return err
	}
	d.enter(st.ID, &driven{id: st.ID, s: s})
	return d.Observer.Started(s, ev)
}

func (d *Driver) enter(id string, dv *driven) {
	if d.Interleaved {
		d.sessions[id] = dv
	} else {
		d.cur = dv
	}
}

// end ends a session: the observer is told before it is closed. A log's
// ended session is kept, without its state, to refuse records after it.
func (d *Driver) end(dv *driven, ev *Event) error {
	s := dv.s
	err := d.Observer.Ended(s, ev)
	dv.s, dv.ended = nil, true
	if d.cur == dv {
		d.cur = nil
	}
	if eerr := s.End(ev.At, ev.End); err == nil {
		err = eerr
	}
	return err
}

func (d *Driver) call(dv *driven, ev *Event) error {
	s, c := dv.s, ev.Call.Call
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
	dv.last = c.ID
	_, err := s.Call(ev.At, c, committed, ev.Call.Body)
	return err
}

// grant applies the one rule for answers: a grant settles its call when
// it claims to (a log's that records settling it, a trace's right after
// a plain ask) and the call is waiting for an answer; otherwise it is
// kept for a later identical call.
func (d *Driver) grant(dv *driven, ev *Event) error {
	s, gs := dv.s, ev.Grant
	var pc *Pending
	if !gs.Carried() {
		var err error
		if pc, err = s.Lookup(gs.Call); err != nil {
			return &StepError{Pos: ev.Pos, Step: "grant", Reason: err.Error()}
		}
	}
	g := grantFor(s, pc, gs, ev.At)
	if p, ok := d.Observer.(Preparer); ok {
		if err := p.Prepare(s, ev, &g); err != nil {
			return err
		}
	}
	// A log's claim is its record's: the gateway settled the call, and
	// the reader goes on from what happened, whatever it recomputes (an
	// ask on redacted arguments included). A trace's grant claims the
	// ask right before it, and only a plain one: an ask whose verdict
	// rests on redacted arguments is not known to be one.
	claims := gs.Settled && pc != nil
	if !gs.Logged {
		claims = gs.Call == dv.last && !pc.decision.Unevaluable
	}
	if !claims || !pc.waiting {
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

// grantFor is the grant a step gives: a log's bound to what its record
// names, a trace's to the call it answers, on the session's server when
// none is named; expiring, unless it says when, the policy's approval
// TTL after it is given.
func grantFor(s *Session, pc *Pending, gs *GrantStep, now time.Time) engine.Grant {
	exp := gs.Expires
	if exp.IsZero() && !gs.Logged { // a log's grant expires as written, whatever it says
		exp = now.Add(s.Policy().ApprovalTTL())
	}
	ref, digest := gs.Tool, gs.Digest
	if !gs.Logged {
		c := pc.Call()
		ref, digest = c.ToolRef, c.Digest
	}
	if ref.Server == "" {
		ref.Server = s.State().Server
	}
	return engine.Grant{ID: gs.ID, ToolRef: ref, Digest: digest,
		Approver: gs.Approver, Approve: gs.Approve, Expires: exp}
}
