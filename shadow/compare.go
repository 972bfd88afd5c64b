package shadow

import (
	"fmt"
	"sync"
	"time"

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
	cmp := &comparison{base: base, cand: cand, file: file, fn: fn, pairs: pooledPairs()}
	defer func() {
		cmp.close()
		recyclePairs(cmp.pairs)
	}()
	for i := range events {
		ev := &events[i]
		fail := func(format string, a ...any) error {
			return &replay.SyntaxError{File: file, Line: ev.Line, Reason: fmt.Sprintf(format, a...)}
		}
		if ev.Start != nil {
			if cmp.b != nil {
				return fail("session %q starts before session %q ended", ev.Start.Session, cmp.b.ID())
			}
			cmp.b, cmp.c = start(base, ev), start(cand, ev)
			continue
		}
		if cmp.b == nil {
			return fail("event before any start")
		}
		if err := cmp.step(ev, fail); err != nil {
			return err
		}
	}
	cmp.flush()
	return nil
}

// comparison is one session being compared: its two sides, and the pairs
// of its calls so far.
type comparison struct {
	base, cand *engine.Policy
	file       string
	fn         func(Pair)
	b, c       *audit.Session
	pairs      []Pair
	index      map[string]int // pairs by call id
}

// flush hands the session's pairs on and closes its sides.
func (cmp *comparison) flush() {
	for _, p := range cmp.pairs {
		cmp.fn(p)
	}
	// fn took copies: the array is filled again by the next session.
	clear(cmp.pairs)
	cmp.pairs, cmp.index = cmp.pairs[:0], nil
	cmp.close()
}

func (cmp *comparison) close() {
	if cmp.b != nil {
		cmp.b.Close()
		cmp.c.Close()
	}
	cmp.b, cmp.c = nil, nil
}

func (cmp *comparison) step(ev *replay.Event, fail func(string, ...any) error) error {
	b, c := cmp.b, cmp.c
	now := replay.EventTime(ev)
	switch {
	case ev.Call != nil:
		return cmp.call(ev, now, fail)
	case ev.Grant != nil:
		return cmp.grant(ev, now, fail)
	case ev.Output != nil:
		o := ev.Output
		body := &audit.ResultBody{Call: o.Call, Server: o.Server, Tool: o.Tool, Channel: o.Channel, Status: replay.OutputStatus(o)}
		out := replay.Brought(o)
		if out != nil && !out.Unknown {
			// Both sides take the same text: analyze it once.
			out.Analyzed = &engine.Analyzed{Text: out.Text}
		}
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
		cmp.flush()
	}
	return nil
}

func (cmp *comparison) call(ev *replay.Event, now time.Time, fail func(string, ...any) error) error {
	b, c, e := cmp.b, cmp.c, ev.Call
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
	// The candidate's state follows history; its own verdict waits in
	// the pair, for a grant to settle.
	b.Call(now, call, db, nil)
	c.Call(now, call, db, nil)
	if cmp.index == nil {
		cmp.index = map[string]int{}
	}
	cmp.pairs = append(cmp.pairs, Pair{File: cmp.file, Session: b.ID(), Pos: ev.Line, ID: e.ID, Tool: e.Tool, Label: e.Label, Baseline: db, Candidate: dc})
	cmp.index[e.ID] = len(cmp.pairs) - 1
	return nil
}

func (cmp *comparison) grant(ev *replay.Event, now time.Time, fail func(string, ...any) error) error {
	b, c, g := cmp.b, cmp.c, ev.Grant
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
		return nil
	}
	p := &cmp.pairs[cmp.index[g.Call]]
	p.Baseline = db
	if p.Candidate.Verdict == engine.Ask && !p.Candidate.Unevaluable {
		p.Candidate = engine.Answer(cmp.cand, c.State(), pc.Call(), p.Candidate, grant, now)
	}
	b.Settle(now, pb, db, nil)
	c.Settle(now, pc, db, nil)
	return nil
}

// start opens one side of a session read back.
func start(p *engine.Policy, ev *replay.Event) *audit.Session {
	st := ev.Start
	s, _ := audit.Start(audit.Config{Policy: p, Spill: true}, replay.EventTime(ev), st.Session,
		&audit.SessionBody{Server: st.Server, Principal: st.Principal, Tools: st.Tools})
	return s
}

// pairsPool holds the pair slices ([]Pair) of compared sessions, for the
// sessions after: each otherwise grows its own from nothing.
var pairsPool sync.Pool

const maxPooledPairs = 1 << 14

func pooledPairs() []Pair {
	if p, ok := pairsPool.Get().(*[]Pair); ok {
		return *p
	}
	return nil
}

func recyclePairs(pairs []Pair) {
	if cap(pairs) == 0 || cap(pairs) > maxPooledPairs {
		return
	}
	clear(pairs[:cap(pairs)])
	pairs = pairs[:0]
	pairsPool.Put(&pairs)
}
