package shadow

import (
	"fmt"

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
	var b, c *replay.Stepper
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
				return fail("session %q starts before session %q ended", ev.Start.Session, b.State().Session)
			}
			st := ev.Start
			b = replay.NewStepper(base, st.Session, st.Server, st.Principal, st.Tools)
			c = replay.NewStepper(cand, st.Session, st.Server, st.Principal, st.Tools)
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
			pb, err := b.Call(call)
			if err != nil {
				return fail("%v", err)
			}
			pc, _ := c.Call(call)
			var db engine.Decision
			if e.Recorded != nil {
				db = *e.Recorded
			} else {
				db = b.Evaluate(call, now)
			}
			dc := c.Evaluate(call, now)
			for _, s := range []*replay.Stepper{b, c} {
				if err := s.Err(); err != nil {
					return err
				}
			}
			b.Commit(pb, db)
			// The candidate's state follows history; its own verdict
			// waits in its pending call, for a grant to settle.
			c.Commit(pc, db)
			pairs = append(pairs, Pair{File: file, Session: b.State().Session, Pos: ev.Line, ID: e.ID, Tool: e.Tool, Label: e.Label, Baseline: db, Candidate: dc})
			index[e.ID] = len(pairs) - 1
		case ev.Grant != nil:
			g := ev.Grant
			pb, err := b.Lookup(g.Call)
			if err != nil {
				return fail("grant %v", err)
			}
			pc, _ := c.Lookup(g.Call)
			grant := b.GrantFor(pb, g, now)
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
				b.State().AddGrant(grant)
				c.State().AddGrant(grant)
				continue
			}
			p := &pairs[index[g.Call]]
			p.Baseline = db
			if p.Candidate.Verdict == engine.Ask && !p.Candidate.Unevaluable {
				p.Candidate = engine.Answer(cand, c.State(), pc.Call(), p.Candidate, grant, now)
			}
			b.Settle(pb, db)
			c.Settle(pc, db)
		case ev.Output != nil:
			o := ev.Output
			src, err := b.Source(o.Call, o.Server, o.Tool, ev.Line)
			if err != nil {
				return fail("output %v", err)
			}
			text, known := o.Content()
			b.Output(src, o.Call, o.Error, text, known)
			c.Output(src, o.Call, o.Error, text, known)
		case ev.Tools != nil:
			for _, s := range []*replay.Stepper{b, c} {
				if ev.Repin {
					s.State().Repin(ev.Tools)
				} else {
					s.State().ListTools(ev.Tools)
				}
				if len(ev.Accept) > 0 && s.State().MayAccept(ev.AcceptedBy) {
					s.State().Accept(ev.Accept)
				}
			}
		case ev.End:
			flush()
		}
	}
	flush()
	return nil
}
