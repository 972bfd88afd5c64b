package audit

import (
	"time"

	"bailiff/engine"
)

// Event is one step of a session, from wherever the session is read: a
// trace's line, an audit log's record, a request on the wire. Exactly one
// of the step fields is set. A driver only says where its events come
// from and what it observes; Driver applies them, under one set of rules.
type Event struct {
	At  time.Time
	Pos int // where it was read (a trace's line, a record's seq): errors and positions name it
	// Session is the session a log's record is of; a trace's events are
	// of the session started last.
	Session string

	Start  *StartStep
	Call   *CallStep
	Grant  *GrantStep
	Result *ResultStep
	Tools  *ToolsBody
	End    *EndBody
}

// StartStep opens session ID as Body says, under Policy (nil: the
// driver's). A session whose record could not be used (Unjudged) is
// started so that its other records are known to be its, and is judged
// by no rule.
type StartStep struct {
	ID       string
	Body     *SessionBody
	Policy   *engine.Policy
	Unjudged bool
}

// CallStep is one tools/call.
type CallStep struct {
	Call  *engine.Call
	Label string // a trace's label for the call (attack, benign), for reports
	// Recorded is the decision a log holds for the call: it is what is
	// committed, and the engine's own is not asked for unless the driver
	// recomputes. Nil for a call the engine decides.
	Recorded *engine.Decision
	// Body is the call record written, with a log.
	Body *CallBody
}

// GrantStep is a human's answer to an asked call.
type GrantStep struct {
	Call     string // the call it answers
	ID       string
	Approver string
	Approve  bool
	Expires  time.Time // zero: the policy's approval TTL from the event's time
	// Logged marks a grant read from a log, which claims to settle its
	// call when its record says it settled it (Settled). A trace's grant
	// claims to settle its call when it follows it, with no other call
	// between.
	Logged, Settled bool
	// Recorded is the decision a log's settling grant holds: it is what
	// is committed, unless the reader drops it to have the engine decide
	// (a baseline policy of the reader's own).
	Recorded *engine.Decision
	// Tool and Digest are what a log's grant names; a trace's grant is
	// bound to the call it answers.
	Tool   engine.ToolRef
	Digest string
	// Body is the grant record: written with a log, or as read back.
	Body *GrantBody
}

// Carried tells a log's grant taken up from another session (Body.From):
// its Call is that session's, not one of this one.
func (gs *GrantStep) Carried() bool { return gs.Logged && gs.Body != nil && gs.Body.From != "" }

// ResultStep is what came back for a call, as Body records it, with Out
// its output (nil for none).
type ResultStep struct {
	Body *ResultBody
	Out  *Output
	// Load, for a result read from a log whose evidence is read only
	// when the step is taken, reads its output: the reader sets Out from
	// it, and clears it after, so a session's events hold no output.
	Load func() *Output
}

// Observer is told each step as the driver takes it, as OPA's query
// tracer is told each step of an evaluation: printing, recording,
// comparing and verifying are observers of one loop. A step's hook comes
// before the step is committed to the session, so an observer deciding
// on the same history (a candidate policy) sees the state the call was
// decided on; an error from a hook stops the drive.
type Observer interface {
	// Started is told a session has started.
	Started(s *Session, ev *Event) error
	// Called is told the decision the engine made on a call (the zero
	// Decision when it was not asked: a recorded call, not recomputed)
	// and the decision committed.
	Called(s *Session, ev *Event, decided, committed engine.Decision) error
	// Granted is told a grant: settling its call pc with decided (the
	// engine's answer, zero when not asked) and committed, or, when
	// settles is false, kept for a later identical call.
	Granted(s *Session, ev *Event, pc *Pending, g engine.Grant, settles bool, decided, committed engine.Decision) error
	// Resulted is told what a call brought, once the session has it.
	Resulted(s *Session, ev *Event, src engine.Source) error
	// ToolsListed is told a tools record, once applied; refused says its
	// acceptance was not taken (accepted by nobody, or by the principal).
	ToolsListed(s *Session, ev *Event, refused bool) error
	// Ended is told a session ended, before it is closed.
	Ended(s *Session, ev *Event) error
}

// Preparer is an observer that fills in what a log is written before a
// step is taken: the recorder's bodies, keyed digests and signatures.
// The grant it is given carries the call's server, tool and digest.
type Preparer interface {
	Prepare(s *Session, ev *Event, g *engine.Grant) error
}
