package replay

import (
	"time"

	"bailiff/engine"
)

// Stepper exports the session stepper so that an engine outside this
// package (shadow's comparison) drives sessions exactly as Run, Recorder
// and verify do, spilling included, instead of a copy that could drift.
type Stepper struct{ s *stepper }

// Pending is a call a Stepper has registered.
type Pending struct{ p *pending }

// NewStepper starts one session under p.
func NewStepper(p *engine.Policy, session, server string, principal engine.Principal, tools []engine.ToolDef) *Stepper {
	return &Stepper{newStepper(p, session, server, principal, tools)}
}

// Close gives back what the session spilled.
func (s *Stepper) Close() { s.s.close() }

// Err is the spill file's first error.
func (s *Stepper) Err() error { return s.s.err() }

// State is the session's engine state.
func (s *Stepper) State() *engine.State { return s.s.state }

// Call registers a new call.
func (s *Stepper) Call(c *engine.Call) (*Pending, error) { return wrap(s.s.call(c)) }

// Evaluate decides c on the current state.
func (s *Stepper) Evaluate(c *engine.Call, now time.Time) engine.Decision {
	return s.s.evaluate(c, now)
}

// Commit applies the decision history took for pc.
func (s *Stepper) Commit(pc *Pending, d engine.Decision) { s.s.commit(pc.p, d) }

// Lookup finds a registered call by id.
func (s *Stepper) Lookup(id string) (*Pending, error) { return wrap(s.s.lookup(id)) }

// GrantFor is the engine grant g stands for.
func (s *Stepper) GrantFor(pc *Pending, g *GrantEvent, now time.Time) engine.Grant {
	return s.s.grantFor(pc.p, g, now)
}

// Answer settles a trace grant.
func (s *Stepper) Answer(pc *Pending, g engine.Grant, now time.Time) (engine.Decision, bool) {
	return s.s.answer(pc.p, g, now)
}

// AnswerWaiting settles a grant that answers the call still waiting.
func (s *Stepper) AnswerWaiting(pc *Pending, g engine.Grant, now time.Time) (engine.Decision, bool) {
	return s.s.answerWaiting(pc.p, g, now)
}

// Settle applies the decision a grant settled pc with.
func (s *Stepper) Settle(pc *Pending, d engine.Decision) { s.s.settle(pc.p, d) }

// Source names the source of a call's output.
func (s *Stepper) Source(callID, server, tool string, pos int) (engine.Source, error) {
	return s.s.source(callID, server, tool, pos)
}

// Output feeds a call's output to the state.
func (s *Stepper) Output(src engine.Source, callID string, failed bool, text string, known bool) {
	s.s.output(src, callID, failed, text, known)
}

// Call is the registered call.
func (p *Pending) Call() *engine.Call { return p.p.call }

// Waiting says the call was asked and no grant has settled it yet.
func (p *Pending) Waiting() bool { return p.p.waiting }

// EventTime is the clock an event is judged at.
func EventTime(ev *Event) time.Time { return eventTime(ev) }

func wrap(p *pending, err error) (*Pending, error) {
	if p == nil {
		return nil, err
	}
	return &Pending{p}, err
}
