package shadow

import (
	"fmt"

	"bailiff/audit"
	"bailiff/engine"
	"bailiff/replay"
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

// CompareSession drives one session's events under a baseline and a candidate
// at once and calls fn with every call's pair of final decisions, in
// order, when the session ends.
//
// History is the baseline's: what it allowed was forwarded, spent budget
// and produced the outputs the events hold; what it asked was answered by
// the grants that follow. The candidate is judged at each call on that
// same history (its own trusted sources decide what taints it), the way a
// policy in shadow mode would have been. A call a recorded log holds
// keeps its recorded verdict as the baseline.
func CompareSession(base, cand *engine.Policy, file string, events []replay.Event, fn func(Pair)) error {
	var b, c *audit.Session
	var pairs []Pair
	index := map[string]int{}
	flush := func() {
		for _, p := range pairs {
			fn(p)
		}
		pairs, index = nil, map[string]int{}
		if b != nil {
			b.Close()
			c.Close()
		}
		b, c = nil, nil
	}
	defer func() {
		if b != nil {
			b.Close()
			c.Close()
		}
	}()
	for i := range events {
		ev := &events[i]
		fail := func(format string, a ...any) error {
			return &replay.SyntaxError{File: file, Line: ev.Line, Reason: fmt.Sprintf(format, a...)}
		}
		if ev.Start != nil {
			if b != nil {
				return fail("session %q starts before session %q ended", ev.Start.Session, b.ID())
			}
			b, c = start(base, ev), start(cand, ev)
			continue
		}
		if b == nil {
			return fail("event before any start")
		}
		now := replay.EventTime(ev)
		switch {
		case ev.Call != nil:
			e := ev.Call
			digest := e.Digest
			if digest == "" {
				digest = engine.ArgsDigest(e.Args)
			}
			server := e.Server
			if server == "" {
				server = b.State().Server
			}
			call := &engine.Call{ID: e.ID, Server: server, Tool: e.Tool, Args: e.Args, Redacted: e.Redacted, Digest: digest}
			if _, dup := b.Lookup(e.ID); dup == nil {
				return fail("call id %q used twice in session %q", e.ID, b.ID())
			}
			var db engine.Decision
			if e.Recorded != nil {
				db = *e.Recorded
			} else {
				db = b.Decide(call, now)
			}
			dc := c.Decide(call, now)
			for _, s := range []*audit.Session{b, c} {
				if err := s.Err(); err != nil {
					return err
				}
			}
			// The candidate's state follows history; its own verdict
			// waits in the pair, for a grant to settle.
			b.Call(now, call, db, nil)
			c.Call(now, call, db, nil)
			pairs = append(pairs, Pair{File: file, Session: b.ID(), Pos: ev.Line, ID: e.ID, Tool: e.Tool, Label: e.Label, Baseline: db, Candidate: dc})
			index[e.ID] = len(pairs) - 1
		case ev.Grant != nil:
			g := ev.Grant
			pb, err := b.Lookup(g.Call)
			if err != nil {
				return fail("grant %v", err)
			}
			pc, _ := c.Lookup(g.Call)
			grant := replay.GrantFor(b, pb, g, now)
			var db engine.Decision
			var settles bool
			switch {
			case g.Recorded != nil:
				db, settles = *g.Recorded, pb.Waiting()
			case g.Settled:
				db, settles = b.AnswerWaiting(pb, grant, now)
			case !g.Logged:
				db, settles = b.Answer(pb, grant, now)
			}
			if !settles {
				b.Grant(now, grant, nil)
				c.Grant(now, grant, nil)
				continue
			}
			p := &pairs[index[g.Call]]
			p.Baseline = db
			if p.Candidate.Verdict == engine.Ask && !p.Candidate.Unevaluable {
				p.Candidate = engine.Answer(cand, c.State(), pc.Call(), p.Candidate, grant, now)
			}
			b.Settle(now, pb, db, nil)
			c.Settle(now, pc, db, nil)
		case ev.Output != nil:
			o := ev.Output
			body := &audit.ResultBody{Call: o.Call, Server: o.Server, Tool: o.Tool, Channel: o.Channel, Status: replay.OutputStatus(o)}
			out := replay.Brought(o)
			if _, err := b.Result(now, ev.Line, body, out); err != nil {
				return fail("output %v", err)
			}
			c.Result(now, ev.Line, body, out)
		case ev.Tools != nil:
			// An acceptance the session may not take is history too:
			// verify reports it, and neither side applies it.
			body := &audit.ToolsBody{Tools: ev.Tools, Repin: ev.Repin, Accept: ev.Accept, AcceptedBy: ev.AcceptedBy}
			b.Tools(now, body)
			c.Tools(now, body)
		case ev.End:
			flush()
		}
	}
	flush()
	return nil
}

// start opens one side of a session read back.
func start(p *engine.Policy, ev *replay.Event) *audit.Session {
	st := ev.Start
	s, _ := audit.Start(audit.Config{Policy: p, Spill: true}, replay.EventTime(ev), st.Session,
		&audit.SessionBody{Server: st.Server, Principal: st.Principal, Tools: st.Tools})
	return s
}
