package replay

import (
	"fmt"
	"time"

	"bailiff/engine"
	"bailiff/internal/fault"
)

// stepper is one session being driven through the engine, whatever the
// events come from (a trace, or an audit log being recorded or verified):
// it keeps the engine state, the calls made, and the asked call waiting
// for its answer. Deciding and committing are separate steps, so verify
// can commit the recorded decision where it differs from the recomputed
// one and go on judging later calls on what really happened.
type stepper struct {
	p     *engine.Policy
	state *engine.State
	calls map[string]*pending
	open  *pending // an asked call still waiting for its answer
}

type pending struct {
	call     *engine.Call
	decision engine.Decision
	waiting  bool // asked, and no grant has settled it yet
}

func newStepper(p *engine.Policy, session, server string, principal engine.Principal, tools []engine.ToolDef) *stepper {
	st := engine.NewState(session, server, principal, tools)
	// Offline, a session's output can be far larger than memory.
	st.SpillTo(spill, spillAfter)
	return &stepper{p: p, state: st, calls: map[string]*pending{}}
}

// close gives back what the session spilled; the stepper is not used
// after.
func (s *stepper) close() { s.state.Close() }

// err is the spill file's first error: a decision made after it may have
// missed output, and must not be reported as the engine's.
func (s *stepper) err() error { return s.state.Err() }

// call registers a new call. A new call ends the wait for an answer to an
// earlier ask: an unanswered ask stays an ask (no answer is a deny).
func (s *stepper) call(c *engine.Call) (*pending, error) {
	s.open = nil
	if _, dup := s.calls[c.ID]; dup {
		return nil, fmt.Errorf("call id %q used twice in session %q", c.ID, s.state.Session)
	}
	pc := &pending{call: c}
	s.calls[c.ID] = pc
	return pc, nil
}

func (s *stepper) evaluate(c *engine.Call, now time.Time) engine.Decision {
	fault.At(fault.Decide, c.Tool)
	return engine.Decide(s.p, s.state, c, now)
}

// commit records the effect of the decision on a call: an ask waits for
// its answer; anything else is applied. An unevaluable decision has no
// known effect and is not applied.
func (s *stepper) commit(pc *pending, d engine.Decision) {
	pc.decision = d
	switch {
	case d.Unevaluable:
		pc.waiting = d.Verdict == engine.Ask
	case d.Verdict == engine.Ask:
		s.open, pc.waiting = pc, true
	default:
		s.state.Apply(s.p, pc.call, d)
	}
}

func (s *stepper) lookup(id string) (*pending, error) {
	pc, ok := s.calls[id]
	if !ok {
		return nil, fmt.Errorf("answers call %q, which session %q has not made", id, s.state.Session)
	}
	return pc, nil
}

// grantFor binds a trace's grant to the call it answers.
func (s *stepper) grantFor(pc *pending, g *GrantEvent, now time.Time) engine.Grant {
	exp := g.Expires
	if exp.IsZero() {
		exp = now.Add(s.p.ApprovalTTL())
	}
	server := pc.call.Server
	if server == "" {
		server = s.state.Server
	}
	return engine.Grant{ID: g.ID, Server: server, Tool: pc.call.Tool, Digest: pc.call.Digest,
		Approver: g.Approver, Approve: g.Approve, Expires: exp}
}

// answer decides the asked call pc with grant g, if pc is the call
// waiting for an answer; otherwise the grant is for a later identical
// call and settles nothing.
func (s *stepper) answer(pc *pending, g engine.Grant, now time.Time) (engine.Decision, bool) {
	if s.open != pc {
		return engine.Decision{}, false
	}
	return engine.Answer(s.p, s.state, pc.call, pc.decision, g, now), true
}

// answerWaiting decides pc with grant g if pc was asked and nothing has
// settled it yet, whatever came in between: how an audit log's grant
// records are read, since a live gateway answers asks concurrently.
func (s *stepper) answerWaiting(pc *pending, g engine.Grant, now time.Time) (engine.Decision, bool) {
	if !pc.waiting {
		return engine.Decision{}, false
	}
	return engine.Answer(s.p, s.state, pc.call, pc.decision, g, now), true
}

func (s *stepper) settle(pc *pending, d engine.Decision) {
	pc.decision, pc.waiting = d, false
	if s.open == pc {
		s.open = nil
	}
	s.state.Apply(s.p, pc.call, d)
}

// source names the output of a call (or of a tool, for output the
// session saw otherwise) at position pos.
func (s *stepper) source(callID, server, tool string, pos int) (engine.Source, error) {
	if callID != "" {
		pc, err := s.lookup(callID)
		if err != nil {
			return engine.Source{}, err
		}
		if tool == "" {
			tool = pc.call.Tool
		}
	}
	if server == "" {
		server = s.state.Server
	}
	return engine.Source{Pos: pos, Server: server, Tool: tool}, nil
}

// output records what a tool returned; known says whether text is the
// output's text or the output was purged. A failed call gives its budget
// back.
func (s *stepper) output(src engine.Source, callID string, failed bool, text string, known bool) {
	if failed && callID != "" {
		s.state.Failed(callID)
	}
	if known {
		s.state.AddOutput(s.p, src, text)
	} else {
		s.state.AddPurged(s.p, src)
	}
}
