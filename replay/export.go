package replay

import (
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
)

// The verify package drives sessions with the same stepper and shares
// the same policy and evidence caches as Compare and the Recorder, so a
// log is judged offline exactly as it was recorded. These are the names
// it uses; the stepper stays here while Compare and Run share it.

// Stepper is one session driven through the engine (see stepper).
type Stepper = stepper

// Pending is a call a Stepper has registered.
type Pending = pending

// NewStepper starts a session; its output spills to the process's spill
// file past a bound.
func NewStepper(p *engine.Policy, session, server string, principal engine.Principal, tools []engine.ToolDef) *Stepper {
	return newStepper(p, session, server, principal, tools)
}

// State is the session's engine state.
func (s *stepper) State() *engine.State { return s.state }

// Close gives back what the session spilled.
func (s *stepper) Close() { s.close() }

// Err is the spill file's first error.
func (s *stepper) Err() error { return s.err() }

// Call registers a new call; an id used twice is an error.
func (s *stepper) Call(c *engine.Call) (*Pending, error) { return s.call(c) }

// Evaluate decides a call on the state so far.
func (s *stepper) Evaluate(c *engine.Call, now time.Time) engine.Decision { return s.evaluate(c, now) }

// Commit applies the decision taken on a call.
func (s *stepper) Commit(pc *Pending, d engine.Decision) { s.commit(pc, d) }

// Lookup is the registered call id.
func (s *stepper) Lookup(id string) (*Pending, error) { return s.lookup(id) }

// AnswerWaiting decides pc with g if pc is waiting for an answer.
func (s *stepper) AnswerWaiting(pc *Pending, g engine.Grant, now time.Time) (engine.Decision, bool) {
	return s.answerWaiting(pc, g, now)
}

// Settle applies the decision a grant settled pc with.
func (s *stepper) Settle(pc *Pending, d engine.Decision) { s.settle(pc, d) }

// Source names the output of a call, or of a tool, at position pos.
func (s *stepper) Source(callID, server, tool string, pos int) (engine.Source, error) {
	return s.source(callID, server, tool, pos)
}

// Output records what a tool returned (known: text is its text, not
// purged).
func (s *stepper) Output(src engine.Source, callID string, failed bool, text string, known bool) {
	s.output(src, callID, failed, text, known)
}

// Call is the call pc registered.
func (pc *pending) Call() *engine.Call { return pc.call }

// Cache is the policies and evidence text the sessions of one log share.
type Cache = verifier

// NewCache is an empty cache over the evidence store ev.
func NewCache(ev chain.Evidence) *Cache {
	return &verifier{ev: ev, policies: map[string]*policyEntry{}}
}

// Policy loads the embedded policy text of a session record, once per
// version; problem says why it cannot be used (edited, does not load,
// not canonical).
func (v *verifier) Policy(text, version string) (p *engine.Policy, problem string) {
	return v.policy(text, version)
}

// Evidence is the output text of the evidence stored under digest.
func (v *verifier) Evidence(digest string) (string, error) { return v.evidence(digest) }

// CheckChannel holds a result of another channel than tools/call to its
// form (see checkChannel).
func CheckChannel(b audit.ResultBody) error { return checkChannel(b) }

// GrantFor is the engine grant a trace grant stands for.
func (s *stepper) GrantFor(pc *Pending, g *GrantEvent, now time.Time) engine.Grant {
	return s.grantFor(pc, g, now)
}

// Answer settles a trace grant.
func (s *stepper) Answer(pc *Pending, g engine.Grant, now time.Time) (engine.Decision, bool) {
	return s.answer(pc, g, now)
}

// Waiting says the call was asked and no grant has settled it yet.
func (pc *pending) Waiting() bool { return pc.waiting }

// EventTime is the clock an event is judged at.
func EventTime(ev *Event) time.Time { return eventTime(ev) }
