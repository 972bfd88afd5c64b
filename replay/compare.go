package replay

import (
	"errors"
	"fmt"
	"io"
	"time"

	"bailiff/chain"
	"bailiff/engine"
	"bailiff/internal/records"
)

// Pair is one call decided two ways over the same history: by the
// baseline (the verdict recorded in an audit log, or a baseline policy's
// over a trace) and by a candidate policy.
type Pair struct {
	File      string
	Session   string
	Pos       int // trace line, or record seq
	ID        string
	Tool      string
	Label     string
	Baseline  engine.Decision
	Candidate engine.Decision
}

// Compare drives one session's events under a baseline and a candidate
// at once and calls fn with every call's pair of final decisions, in
// order, when the session ends.
//
// History is the baseline's: what it allowed was forwarded, spent budget
// and produced the outputs the events hold; what it asked was answered by
// the grants that follow. The candidate is judged at each call on that
// same history (its own trusted sources decide what taints it), the way a
// policy in shadow mode would have been. A call a recorded log holds
// keeps its recorded verdict as the baseline.
func Compare(base, cand *engine.Policy, file string, events []Event, fn func(Pair)) error {
	var b, c *stepper
	var pairs []Pair
	index := map[string]int{}
	flush := func() {
		for _, p := range pairs {
			fn(p)
		}
		pairs, index = nil, map[string]int{}
		if b != nil {
			b.close()
			c.close()
		}
		b, c = nil, nil
	}
	defer func() {
		if b != nil {
			b.close()
			c.close()
		}
	}()
	for i := range events {
		ev := &events[i]
		fail := func(format string, a ...any) error {
			return &SyntaxError{File: file, Line: ev.Line, Reason: fmt.Sprintf(format, a...)}
		}
		if ev.Start != nil {
			if b != nil {
				return fail("session %q starts before session %q ended", ev.Start.Session, b.state.Session)
			}
			st := ev.Start
			b = newStepper(base, st.Session, st.Server, st.Principal, st.Tools)
			c = newStepper(cand, st.Session, st.Server, st.Principal, st.Tools)
			continue
		}
		if b == nil {
			return fail("event before any start")
		}
		now := eventTime(ev)
		switch {
		case ev.Call != nil:
			e := ev.Call
			digest := e.Digest
			if digest == "" {
				digest = engine.ArgsDigest(e.Args)
			}
			server := e.Server
			if server == "" {
				server = b.state.Server
			}
			call := &engine.Call{ID: e.ID, Server: server, Tool: e.Tool, Args: e.Args, Redacted: e.Redacted, Digest: digest}
			pb, err := b.call(call)
			if err != nil {
				return fail("%v", err)
			}
			pc, _ := c.call(call)
			var db engine.Decision
			if e.Recorded != nil {
				db = *e.Recorded
			} else {
				db = b.evaluate(call, now)
			}
			dc := c.evaluate(call, now)
			for _, s := range []*stepper{b, c} {
				if err := s.err(); err != nil {
					return err
				}
			}
			b.commit(pb, db)
			// The candidate's state follows history; its own verdict
			// waits in its pending call, for a grant to settle.
			c.commit(pc, db)
			pairs = append(pairs, Pair{File: file, Session: b.state.Session, Pos: ev.Line, ID: e.ID, Tool: e.Tool, Label: e.Label, Baseline: db, Candidate: dc})
			index[e.ID] = len(pairs) - 1
		case ev.Grant != nil:
			g := ev.Grant
			pb, err := b.lookup(g.Call)
			if err != nil {
				return fail("grant %v", err)
			}
			pc, _ := c.lookup(g.Call)
			grant := b.grantFor(pb, g, now)
			var db engine.Decision
			var settles bool
			switch {
			case g.Recorded != nil:
				db, settles = *g.Recorded, pb.waiting
			case g.Settled:
				db, settles = b.answerWaiting(pb, grant, now)
			case !g.Logged:
				db, settles = b.answer(pb, grant, now)
			}
			if !settles {
				b.state.AddGrant(grant)
				c.state.AddGrant(grant)
				continue
			}
			p := &pairs[index[g.Call]]
			p.Baseline = db
			if p.Candidate.Verdict == engine.Ask && !p.Candidate.Unevaluable {
				p.Candidate = engine.Answer(cand, c.state, pc.call, p.Candidate, grant, now)
			}
			b.settle(pb, db)
			c.settle(pc, db)
		case ev.Output != nil:
			o := ev.Output
			src, err := b.source(o.Call, o.Server, o.Tool, ev.Line)
			if err != nil {
				return fail("output %v", err)
			}
			text, known := o.Content()
			b.output(src, o.Call, o.Error, text, known)
			c.output(src, o.Call, o.Error, text, known)
		case ev.Tools != nil:
			for _, s := range []*stepper{b, c} {
				if ev.Repin {
					s.state.Repin(ev.Tools)
				} else {
					s.state.ListTools(ev.Tools)
				}
				if len(ev.Accept) > 0 && s.state.MayAccept(ev.AcceptedBy) {
					s.state.Accept(ev.Accept)
				}
			}
		case ev.End:
			flush()
		}
	}
	flush()
	return nil
}

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
func LogSessions(name string, r io.Reader, ev chain.Evidence, fn func(LogSession) error) error {
	v := &verifier{file: name, ev: ev, policies: map[string]*policyEntry{}}
	open := map[string]*LogSession{}
	rd := chain.NewReader(r)
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
			var b chain.SessionBody
			if err := chain.DecodeBody(rec.Body, &b); err != nil {
				return fail(err)
			}
			p, problem := v.policy(b.Policy, b.PolicyVersion)
			if problem != "" {
				return fail(errors.New(problem))
			}
			ls = &LogSession{Policy: p}
			open[rec.Session] = ls
			ls.Events = append(ls.Events, Event{Line: int(rec.Seq), At: rec.TS, Start: &Start{Session: rec.Session, Server: b.Server,
				Principal: engine.Principal(b.Principal), Tools: records.ToolDefs(b.Tools)}})
			continue
		}
		if ls == nil {
			return fail(fmt.Errorf("%s record of session %q, which has not started", rec.Kind, rec.Session))
		}
		e, err := v.event(rec)
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
func (v *verifier) event(rec chain.Record) (Event, error) {
	e := Event{Line: int(rec.Seq), At: rec.TS}
	switch rec.Kind {
	case chain.KindTools:
		var b chain.ToolsBody
		if err := chain.DecodeBody(rec.Body, &b); err != nil {
			return e, err
		}
		e.Tools, e.Repin, e.Accept = records.ToolDefs(b.Tools), b.Repin, records.ToolDefs(b.Accept)
		e.AcceptedBy = b.AcceptedBy
	case chain.KindCall:
		var b chain.CallBody
		if err := chain.DecodeBody(rec.Body, &b); err != nil {
			return e, err
		}
		d := records.ToDecision(b.Decision)
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
		var b chain.GrantBody
		if err := chain.DecodeBody(rec.Body, &b); err != nil {
			return e, err
		}
		exp, err := time.Parse(chain.TimeFormat, b.Expires)
		if err != nil {
			return e, err
		}
		g := &GrantEvent{ID: b.Grant, Call: b.Call, Approver: b.Approver, Approve: b.Answer == "approve", Expires: exp, Logged: true}
		if b.Decision != nil {
			d := records.ToDecision(*b.Decision)
			g.Recorded, g.Settled = &d, true
		}
		e.Grant = g
	case chain.KindResult:
		var b chain.ResultBody
		if err := chain.DecodeBody(rec.Body, &b); err != nil {
			return e, err
		}
		if err := checkChannel(b); err != nil {
			return e, err
		}
		o := &Output{Call: b.Call, Server: b.Server, Tool: b.Tool, Channel: b.Channel, Error: b.Status != chain.StatusOK}
		if digest := b.Content; digest != "" {
			o.load = func() (string, bool) {
				text, err := v.evidence(digest)
				return text, err == nil
			}
		}
		e.Output = o
	case chain.KindEnd:
		e.End = true
	}
	return e, nil
}
