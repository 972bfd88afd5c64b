package audit

import (
	"errors"
	"fmt"
	"time"

	"bailiff/chain"
	"bailiff/engine"
	"bailiff/internal/fault"
)

// Session is one session driven through the engine, live or offline: the
// only code that applies the effect of a session's steps to its state,
// and, given a log, writes each step's record before applying it. The
// Driver takes every driver's events to it: the live gateway's as
// requests arrive, the Recorder's and Replay's from a trace, verify's,
// shadow's and the summary's from records read back, with no log. One
// session and one loop mean the offline tools re-derive a decision under
// exactly the rules the gateway made it under.
//
// Deciding and committing are separate steps, so verify can commit the
// recorded decision where it differs from the recomputed one and go on
// judging later calls on what really happened. A Session is not safe for
// concurrent use: the gateway holds its lock around every step.
type Session struct {
	p     *engine.Policy
	state *engine.State
	log   Log // nil for a session read back: nothing is written
	calls map[string]*Pending
	done  map[string]settled // calls settled with their results (settled.go)
	rare  map[string]rareCall
	names names
}

// Log is where a session's records go (a *chain.Writer). A result is
// appended lazily: it need not be on disk before the client hears it,
// only before any later decision is, and the next call record's sync
// carries it (its evidence was synced before it was written).
type Log interface {
	Append(ts time.Time, session string, kind chain.Kind, body any) (chain.Record, error)
	AppendLazy(ts time.Time, session string, kind chain.Kind, body any) (chain.Record, error)
	Next() int64
}

// Pending is a call the session has made. Once its result has come it
// is kept compact (settled.go) and Lookup makes a new Pending of it: one
// held from before then is not the session's any more, and the decision
// of one made again holds its verdict and whether it was unevaluable,
// nothing else (nothing asks more of a settled call).
type Pending struct {
	call     *engine.Call
	decision engine.Decision
	waiting  bool // asked, and no grant has settled it yet
}

// Call is the call.
func (pc *Pending) Call() *engine.Call { return pc.call }

// Decision is the decision committed on the call so far.
func (pc *Pending) Decision() engine.Decision { return pc.decision }

// Waiting says the call was asked and no grant has settled it yet.
// A nil one (a grant carried from another session has no call here) is
// not waiting.
func (pc *Pending) Waiting() bool { return pc != nil && pc.waiting }

// Config is what a session is driven with.
type Config struct {
	Policy *engine.Policy
	// Log, when set, is written a record for every step, before the step
	// is applied; nil drives a session read back.
	Log Log
	// Spill lets the session's output leave memory past a bound, into the
	// process's spill file: offline, a session's output can be far larger
	// than memory.
	Spill bool
	// Ledger, when set, is where the sessions of a policy with tenant
	// budgets or rates spend and count, together; each session keeps its
	// own otherwise.
	Ledger *Ledger
}

// Start opens session id as body says. With a log, the session record is
// written first, carrying the policy and engine the session is decided
// under (filled in here, so no writer can record another).
func Start(cfg Config, now time.Time, id string, body *SessionBody) (*Session, error) {
	if cfg.Log != nil {
		body.PolicyVersion, body.Policy, body.Engine = cfg.Policy.Version(), string(cfg.Policy.Canonical()), engine.Version
		if _, err := cfg.Log.Append(now, id, chain.KindSession, body); err != nil {
			return nil, err
		}
	}
	st := engine.NewState(id, body.Server, body.Principal, body.Tools)
	if cfg.Ledger != nil {
		st.ShareLedger(cfg.Ledger.l)
	}
	if cfg.Spill {
		st.SpillTo(spill, spillAfter)
	}
	return &Session{p: cfg.Policy, state: st, log: cfg.Log, calls: map[string]*Pending{}}, nil
}

// State is the session's engine state, to read.
func (s *Session) State() *engine.State { return s.state }

// Policy is the policy the session is decided under.
func (s *Session) Policy() *engine.Policy { return s.p }

// ID is the session's id.
func (s *Session) ID() string { return s.state.Session }

// Close gives back what the session spilled; the session is not used
// after.
func (s *Session) Close() { s.state.Close() }

// Err is the spill file's first error: a decision made after it may have
// missed output, and must not be reported as the engine's.
func (s *Session) Err() error { return s.state.Err() }

func (s *Session) write(now time.Time, kind chain.Kind, body any) error {
	if s.log == nil {
		return nil
	}
	_, err := s.log.Append(now, s.state.Session, kind, body)
	return err
}

// errAcceptRefused is an acceptance of changed tool definitions by
// nobody, or by the session's own principal: the tool list is applied,
// the acceptance is not.
var errAcceptRefused = errors.New("changed tool definitions were accepted by nobody, or by the principal itself")

// Tools applies a tools record: a later tools/list answer (Repin: pinning
// tools new to the session too) and, with Accept, changed definitions a
// human accepted. With a log, body is written first; the gateway never
// writes an acceptance it may not take (errAcceptRefused, when read back).
func (s *Session) Tools(now time.Time, body *ToolsBody) error {
	refused := len(body.Accept) > 0 && !s.state.MayAccept(body.AcceptedBy)
	if refused && s.log != nil {
		return errAcceptRefused
	}
	if err := s.write(now, chain.KindTools, body); err != nil {
		return err
	}
	if body.Repin {
		s.state.Repin(body.Tools)
	} else {
		s.state.ListTools(body.Tools)
	}
	switch {
	case refused:
		return errAcceptRefused
	case len(body.Accept) > 0:
		s.state.Accept(body.Accept)
	}
	return nil
}

// Decide judges call c on the state so far; nothing is applied. A call
// without a digest is given its arguments' digest, which grants are bound
// to; one whose arguments were redacted must carry its keyed digest (it
// has no other), and without one no grant can match it.
func (s *Session) Decide(c *engine.Call, now time.Time) engine.Decision {
	return s.DecideAs(s.p, c, now)
}

// DecideAs is Decide under policy p instead of the session's own, on the
// session's state: for a p that shares the state of the session's policy
// (engine's SharesState), as a variant of it does, the decision a session
// of its own driven through the same history would make. It is how shadow
// scores variants without a replay of their own.
func (s *Session) DecideAs(p *engine.Policy, c *engine.Call, now time.Time) engine.Decision {
	if !s.p.SharesState(p) {
		// A decision on a state kept by other rules would be a guess.
		panic("audit: DecideAs under a policy that does not share the session's state")
	}
	if c.Digest == "" && len(c.Redacted) == 0 {
		c.Digest = engine.ArgsDigest(c.Args)
	}
	fault.At(fault.Decide, c.Tool)
	return engine.Decide(p, s.state, c, now)
}

// Call makes call c with decision d: with a log, body is written with d
// as its decision first. Then an ask waits for its answer, and anything
// else is applied; an unevaluable decision has no known effect and is
// not applied. A new call ends the wait for an answer to an earlier ask:
// an unanswered ask stays an ask (no answer is a deny).
func (s *Session) Call(now time.Time, c *engine.Call, d engine.Decision, body *CallBody) (*Pending, error) {
	if s.Made(c.ID) {
		return nil, errors.New(reusedID(s.state.Session, c.ID))
	}
	if s.log != nil {
		body.Decision = FromDecision(d)
		// Only an asked call is put to the client: the mark is what lets
		// an unsigned answer through the client settle it.
		body.Elicit = body.Elicit && d.Verdict == engine.Ask
		fault.At(fault.Record, c.Tool)
		if err := s.write(now, chain.KindCall, body); err != nil {
			return nil, err
		}
	}
	pc := &Pending{call: c}
	s.calls[c.ID] = pc
	s.commit(pc, d, now)
	return pc, nil
}

func (s *Session) commit(pc *Pending, d engine.Decision, now time.Time) {
	pc.decision = d
	switch {
	case d.Unevaluable:
		pc.waiting = d.Verdict == engine.Ask
	case d.Verdict == engine.Ask:
		pc.waiting = true
	default:
		s.state.Apply(s.p, pc.call, d, now)
	}
}

// reusedID is the refusal of a call id used twice: a session's ids name
// one call each (grants and results are bound to them).
func reusedID(session, id string) string {
	return fmt.Sprintf("call id %q used twice in session %q", id, session)
}

// Made tells whether the session has made call id: a second call with an
// id already used is refused, and asking this costs no error value on the
// path every call takes.
func (s *Session) Made(id string) bool {
	if _, ok := s.calls[id]; ok {
		return true
	}
	_, ok := s.done[id]
	return ok
}

// Lookup is the call the session made with id.
func (s *Session) Lookup(id string) (*Pending, error) {
	pc, ok := s.pending(id)
	if !ok {
		return nil, fmt.Errorf("answers call %q, which session %q has not made", id, s.state.Session)
	}
	return pc, nil
}

// Answer is what grant g settles pc with, if pc was asked and nothing
// has settled it yet, whatever came in between (asks are answered
// concurrently with later calls). Which grants claim to settle their
// call at all is the Driver's rule.
func (s *Session) Answer(pc *Pending, g engine.Grant, now time.Time) (engine.Decision, bool) {
	if !pc.waiting {
		return engine.Decision{}, false
	}
	return engine.Answer(s.p, s.state, pc.call, pc.decision, g, now), true
}

// AnswerAs is what grant g settles pc with under policy p, had p asked
// it as asked: how shadow answers a candidate's ask with the grant the
// history holds. p shares the session's state, as for DecideAs.
func (s *Session) AnswerAs(p *engine.Policy, pc *Pending, asked engine.Decision, g engine.Grant, now time.Time) engine.Decision {
	if !s.p.SharesState(p) {
		panic("audit: AnswerAs under a policy that does not share the session's state")
	}
	return engine.Answer(p, s.state, pc.call, asked, g, now)
}

// Settle answers the asked call pc with decision d: with a log, body is
// written with d as its decision first; then d is applied.
func (s *Session) Settle(now time.Time, pc *Pending, d engine.Decision, body *GrantBody) error {
	if s.log != nil {
		rd := FromDecision(d)
		body.Decision = &rd
		if err := s.write(now, chain.KindGrant, body); err != nil {
			return err
		}
	}
	pc.decision, pc.waiting = d, false
	s.state.Apply(s.p, pc.call, d, now)
	return nil
}

// Grant keeps grant g for a later identical call (it settles nothing now):
// with a log, body is written first.
func (s *Session) Grant(now time.Time, g engine.Grant, body *GrantBody) error {
	if err := s.write(now, chain.KindGrant, body); err != nil {
		return err
	}
	s.state.AddGrant(g)
	return nil
}

// Source names the output of a call (or of a tool, for output the
// session saw otherwise) at position pos.
func (s *Session) Source(callID string, ref engine.ToolRef, pos int) (engine.Source, error) {
	origin := ""
	if callID != "" {
		pc, err := s.Lookup(callID)
		if err != nil {
			return engine.Source{}, err
		}
		if ref.Tool == "" {
			ref.Tool = pc.call.Tool
		}
		if ref.Tool == pc.call.Tool {
			// Output said to be another tool's is not the fetch's.
			origin = s.p.OriginOf(s.state.Server, pc.call)
		}
	}
	if ref.Server == "" {
		ref.Server = s.state.Server
	}
	return engine.Source{Pos: pos, ToolRef: ref, Origin: origin}, nil
}

// Output is what a result brought the session: its text, or, Unknown,
// output whose text is not known (purged, or its evidence lost).
type Output struct {
	Text    string
	Unknown bool
	// Analyzed, when set, holds Text and is shared by the sessions the
	// same output is given to, so its text is analyzed once.
	Analyzed *engine.Analyzed
}

// Result is what came back, as body records it, with out its output (nil
// for none: a failure with no content). With a log, body is written
// first, and the output's position is the seq it is written at; read
// back, pos is the record's seq. A failed call gives its budget back.
func (s *Session) Result(now time.Time, pos int, body *ResultBody, out *Output) (engine.Source, error) {
	if s.log != nil {
		pos = int(s.log.Next())
	}
	src, err := s.Source(body.Call, body.ToolRef, pos)
	if err != nil {
		return src, err
	}
	if s.log != nil {
		if _, err := s.log.AppendLazy(now, s.state.Session, chain.KindResult, body); err != nil {
			return src, err
		}
	}
	if body.Status != StatusOK && body.Call != "" {
		s.state.Failed(body.Call, now)
	}
	if pc := s.calls[body.Call]; pc != nil && !pc.waiting {
		// A call with its result is settled: only its id, server, tool
		// and digest are asked of it again (grants, sources). It is kept
		// without its arguments and decision, which would otherwise
		// stay in memory for the whole of a long-lived session.
		s.keep(body.Call, pc)
	}
	switch {
	case out == nil:
	case out.Unknown:
		s.state.AddPurged(s.p, src)
	case out.Analyzed != nil:
		s.state.AddAnalyzed(s.p, src, out.Analyzed)
	default:
		s.state.AddOutput(s.p, src, out.Text)
	}
	return src, nil
}

// End ends the session: with a log, body is written first. The session
// is closed either way.
func (s *Session) End(now time.Time, body *EndBody) error {
	s.Close()
	return s.write(now, chain.KindEnd, body)
}

// Malformed records a request that could not be read as a tools/call: it
// is no step of the session and changes nothing in it, so it needs no
// session (it may come before the session record).
func Malformed(log Log, now time.Time, session string, body *MalformedBody) error {
	_, err := log.Append(now, session, chain.KindMalformed, body)
	return err
}
