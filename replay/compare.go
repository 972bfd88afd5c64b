package replay

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
)

// LogSession is one session of an audit log as events, with the policy it
// was recorded under.
type LogSession struct {
	Policy *engine.Policy
	Events []Event
}

// ID is the session's id, from its start event.
func (s LogSession) ID() string {
	if len(s.Events) > 0 && s.Events[0].Start != nil {
		return s.Events[0].Start.Session
	}
	return ""
}

// LogSessions reads an audit log and calls fn with each session's events
// once the session ends (or the log does), so memory holds only the
// sessions still open. Events carry record seqs as their positions and
// record times as their clocks; calls and settling grants carry their
// recorded decisions; an output's text is read from the evidence store
// only when Output.Content asks for it (Compare does), so memory holds
// one output at a time, not a session's; evidence that is gone or
// altered reads as purged.
// A log that fails integrity, or whose records cannot be read, is an
// error: it must be verified first.
func LogSessions(name string, r io.Reader, ev chain.EvidenceStore, fn func(LogSession) error) error {
	return logSessions(name, chain.NewReader(r), ev, fn)
}

func logSessions(name string, rd *chain.Reader, ev chain.EvidenceStore, fn func(LogSession) error) error {
	v := audit.NewCache(ev)
	open := map[string]*LogSession{}
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w (run bailiff verify)", name, err)
		}
		if rec.Kind == chain.KindCheckpoint || rec.Kind == chain.KindMalformed {
			continue
		}
		fail := func(err error) error {
			return fmt.Errorf("%s: record %d: %v (run bailiff verify)", name, rec.Seq, err)
		}
		ls := open[rec.Session]
		if rec.Kind == chain.KindSession {
			if ls != nil {
				return fail(fmt.Errorf("session %q starts twice", rec.Session))
			}
			var b audit.SessionBody
			if err := chain.DecodeBody(rec.Body, &b); err != nil {
				return fail(err)
			}
			p, problem := v.Policy(b.Policy, b.PolicyVersion)
			if problem != "" {
				return fail(errors.New(problem))
			}
			ls = &LogSession{Policy: p, Events: pooledEvents()}
			open[rec.Session] = ls
			ls.Events = append(ls.Events, Event{Line: int(rec.Seq), At: rec.TS, Start: &Start{Session: rec.Session, Server: b.Server,
				Principal: b.Principal, Tools: b.Tools}})
			continue
		}
		if ls == nil {
			return fail(fmt.Errorf("%s record of session %q, which has not started", rec.Kind, rec.Session))
		}
		e, err := event(v, rec)
		if err != nil {
			return fail(err)
		}
		ls.Events = append(ls.Events, e)
		if rec.Kind == chain.KindEnd {
			delete(open, rec.Session)
			if err := fn(*ls); err != nil {
				return err
			}
		}
	}
	// Sessions still open at the end of the log, oldest first.
	var rest []*LogSession
	for _, ls := range open {
		rest = append(rest, ls)
	}
	for len(rest) > 0 {
		first := 0
		for i := range rest {
			if rest[i].Events[0].Line < rest[first].Events[0].Line {
				first = i
			}
		}
		if err := fn(*rest[first]); err != nil {
			return err
		}
		rest = append(rest[:first], rest[first+1:]...)
	}
	return nil
}

// event turns one record of a started session into an event.
func event(v *audit.Cache, rec chain.Record) (Event, error) {
	e := Event{Line: int(rec.Seq), At: rec.TS}
	switch rec.Kind {
	case chain.KindTools:
		var b audit.ToolsBody
		if err := chain.DecodeBody(rec.Body, &b); err != nil {
			return e, err
		}
		e.Tools, e.Repin, e.Accept = b.Tools, b.Repin, b.Accept
		e.AcceptedBy = b.AcceptedBy
	case chain.KindCall:
		var b audit.CallBody
		if err := chain.DecodeBody(rec.Body, &b); err != nil {
			return e, err
		}
		d := audit.ToDecision(b.Decision)
		c := &Call{ID: b.Call, Tool: b.Tool, Args: b.Args, Server: b.Server, Digest: b.Digest, Recorded: &d}
		for _, r := range b.Redacted {
			p, err := engine.ParsePath(r)
			if err != nil {
				return e, err
			}
			c.Redacted = append(c.Redacted, p)
		}
		e.Call = c
	case chain.KindGrant:
		var b audit.GrantBody
		if err := chain.DecodeBody(rec.Body, &b); err != nil {
			return e, err
		}
		exp, err := time.Parse(chain.TimeFormat, b.Expires)
		if err != nil {
			return e, err
		}
		g := &GrantEvent{ID: b.Grant, Call: b.Call, Approver: b.Approver, Approve: b.Answer == "approve", Expires: exp, Logged: true,
			Server: b.Server, Tool: b.Tool, Digest: b.Digest}
		if b.Decision != nil {
			d := audit.ToDecision(*b.Decision)
			g.Recorded, g.Settled = &d, true
		}
		e.Grant = g
	case chain.KindResult:
		var b audit.ResultBody
		if err := chain.DecodeBody(rec.Body, &b); err != nil {
			return e, err
		}
		if err := audit.CheckChannel(b); err != nil {
			return e, err
		}
		o := &Output{Call: b.Call, Server: b.Server, Tool: b.Tool, Channel: b.Channel, Error: b.Status != audit.StatusOK}
		o.NoContent = b.Content == ""
		if digest := b.Content; digest != "" {
			o.load = func() (string, bool) {
				text, err := v.Evidence(digest)
				return text, err == nil
			}
		}
		e.Output = o
	case chain.KindEnd:
		e.End = true
	}
	return e, nil
}

// Recycle gives back the events of a session LogSessions handed over,
// once nothing reads them any more, for a later session to fill: each
// session otherwise grows its events from nothing.
func Recycle(events []Event) {
	if cap(events) == 0 || cap(events) > maxPooledEvents {
		return
	}
	clear(events[:cap(events)]) // what they point to can go
	events = events[:0]
	eventsPool.Put(&events)
}

// eventsPool holds event slices ([]Event) of sessions compared, up to
// maxPooledEvents each.
var eventsPool sync.Pool

const maxPooledEvents = 1 << 14

func pooledEvents() []Event {
	if p, ok := eventsPool.Get().(*[]Event); ok {
		return *p
	}
	return nil
}
