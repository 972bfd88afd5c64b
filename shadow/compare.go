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
	return CompareSessions(base, []*engine.Policy{cand}, file, events, func(_ int, p Pair) { fn(p) })
}

// CompareSessions is CompareSession for several candidates at once, over
// one baseline: the history is applied once, and each output analyzed
// once, for all of them. fn is called with the candidate's index; a
// session's pairs are handed on candidate by candidate, each in order.
func CompareSessions(base *engine.Policy, cands []*engine.Policy, file string, events []replay.Event, fn func(int, Pair)) error {
	cmp := &comparison{base: base, sd: newSides(cands, file, fn)}
	defer func() {
		cmp.close()
		cmp.sd.recycle()
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
			st := ev.Start
			body := &audit.SessionBody{Server: st.Server, Principal: st.Principal, Tools: st.Tools}
			now := replay.EventTime(ev)
			cmp.b, _ = audit.Start(audit.Config{Policy: base, Spill: true}, now, st.Session, body)
			cmp.sd.start(now, cmp.b, body)
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

// comparison is one session being compared: the baseline's side, which
// makes the history, and the candidates' sides, which follow it.
type comparison struct {
	base *engine.Policy
	b    *audit.Session
	sd   *sides
}

// flush hands the session's pairs on and closes its sides.
func (cmp *comparison) flush() {
	cmp.sd.flush()
	cmp.close()
}

func (cmp *comparison) close() {
	if cmp.b != nil {
		cmp.b.Close()
	}
	cmp.b = nil
}

func (cmp *comparison) step(ev *replay.Event, fail func(string, ...any) error) error {
	b := cmp.b
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
			// Every side takes the same text: analyze it once.
			out.Analyzed = &engine.Analyzed{Text: out.Text}
		}
		if _, err := b.Result(now, ev.Line, body, out); err != nil {
			return fail("output %v", err)
		}
		cmp.sd.result(now, ev.Line, body, out)
	case ev.Tools != nil:
		// An acceptance the session may not take is history too:
		// verify reports it, and no side applies it.
		body := &audit.ToolsBody{Tools: ev.Tools, Repin: ev.Repin, Accept: ev.Accept, AcceptedBy: ev.AcceptedBy}
		b.Tools(now, body)
		cmp.sd.tools(now, body)
	case ev.End:
		cmp.flush()
	}
	return nil
}

func (cmp *comparison) call(ev *replay.Event, now time.Time, fail func(string, ...any) error) error {
	b, e := cmp.b, ev.Call
	digest := e.Digest
	if digest == "" {
		digest = engine.ArgsDigest(e.Args)
	}
	server := e.Server
	if server == "" {
		server = b.State().Server
	}
	call := &engine.Call{ID: e.ID, Server: server, Tool: e.Tool, Args: e.Args, Redacted: e.Redacted, Digest: digest}
	if b.Made(e.ID) {
		return fail("call id %q used twice in session %q", e.ID, b.ID())
	}
	var db engine.Decision
	if e.Recorded != nil {
		db = *e.Recorded
	} else {
		db = b.Decide(call, now)
	}
	if err := b.Err(); err != nil {
		return err
	}
	if err := cmp.sd.call(now, ev.Line, e.Label, call, db); err != nil {
		return err
	}
	b.Call(now, call, db, nil)
	return nil
}

func (cmp *comparison) grant(ev *replay.Event, now time.Time, fail func(string, ...any) error) error {
	b, g := cmp.b, ev.Grant
	pb, err := b.Lookup(g.Call)
	if err != nil {
		return fail("grant %v", err)
	}
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
		cmp.sd.grant(now, grant)
		return nil
	}
	if err := cmp.sd.settle(now, g.Call, grant, db); err != nil {
		return err
	}
	b.Settle(now, pb, db, nil)
	return nil
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
