package audit

import (
	"errors"
	"fmt"
	"io"
	"sync"

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
		return s.Events[0].Start.ID
	}
	return ""
}

// LogSessions reads an audit log and calls fn with each session's events
// once the session ends (or the log does), so memory holds only the
// sessions still open. Events carry record seqs as their positions and
// record times as their clocks; calls and settling grants carry their
// recorded decisions. A result's output is read from the evidence store
// only when its step's Load is called, so memory holds one output at a
// time, not a session's; evidence that is gone or altered reads as
// unknown (purged).
// A log that fails integrity, or whose records cannot be read, is an
// error: it must be verified first.
func LogSessions(name string, r io.Reader, ev chain.EvidenceStore, fn func(LogSession) error) error {
	return readSessions(name, chain.NewReader(r), ev, fn)
}

// readSessions is LogSessions from a chain reader, which the caller can
// ask afterwards how many records it read, and their root.
func readSessions(name string, rd *chain.Reader, ev chain.EvidenceStore, fn func(LogSession) error) error {
	v := NewCache(ev)
	open := map[string]*LogSession{}
	ended := map[string]bool{}
	// One decoder for every record: each event is copied out of it (own)
	// to be kept, and its storage is not allocated again per record.
	var dec Decoder
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w (run bailiff verify)", name, err)
		}
		fail := func(err error) error {
			return fmt.Errorf("%s: record %d: %v (run bailiff verify)", name, rec.Seq, err)
		}
		got, err := dec.Decode(rec)
		e := got.own()
		if errors.Is(err, ErrNoStep) {
			continue
		}
		ls := open[rec.Session]
		if rerr := logRule(&e, ls != nil, ended[rec.Session]); rerr != nil {
			return fail(rerr)
		}
		if err != nil {
			return fail(err)
		}
		if e.Start != nil {
			p, problem := v.Policy(e.Start.Body.Policy, e.Start.Body.PolicyVersion)
			if problem != "" {
				return fail(errors.New(problem))
			}
			open[rec.Session] = &LogSession{Policy: p, Events: append(pooledEvents(), e)}
			continue
		}
		if rs := e.Result; rs != nil && rs.Body.Content != "" {
			digest := rs.Body.Content
			rs.Load = func() *Output {
				text, err := v.Evidence(digest)
				return &Output{Text: text, Unknown: err != nil}
			}
		}
		ls.Events = append(ls.Events, e)
		if e.End != nil {
			delete(open, rec.Session)
			ended[rec.Session] = true
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
			if rest[i].Events[0].Pos < rest[first].Events[0].Pos {
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
