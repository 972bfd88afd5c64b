// Package audit is where a session happens: the only code that applies
// a session's steps to the engine's state, live or read back, and the
// record schema the audit log holds them in. Read it first after engine.
//
// # A session is a sequence of steps
//
// An [Event] is one step: a session starts (its server, principal, tools
// and policy), a call is decided, a human's grant answers an ask, a
// result brings output, the tools are listed again, the session ends. A
// trace's line, an audit log's record and a request on the wire are all
// read as events, and every driver of bailiff (the gateway, replay,
// record, verify, shadow, ablate) hands them to one loop, the [Driver]:
//
//   - a trace's sessions come one after another; a log's interleave, each
//     record naming its own, and a session starts once, with no record
//     before its start or after its end;
//   - a call id is used once in a session;
//   - a call is decided by the engine on the state so far, unless a log
//     recorded its decision and the reader does not recompute it; the
//     decision committed is the recorded one, if any;
//   - a grant settles its call only when it claims to (a log's grant that
//     records settling it, the gateway's in-band answer, a trace's grant
//     right after a plain ask: not one whose verdict rests on redacted
//     arguments) and the call is waiting for an answer; any other grant
//     is kept for a later identical call;
//   - an output is the output of the call it answers, or of the channel
//     that carried it, and a failed call gives its budget back.
//
// A driver says only where its events come from and what it does with
// each step, as an [Observer] told each step before it is committed (a
// candidate policy deciding on the same history sees the state the call
// was decided on). A [Preparer] fills in what a log is written (the
// recorder's bodies and signatures) or checks what a record claims
// (verify's digests and signatures) before the step is taken.
//
// # Records
//
// With a log, the [Session] writes each step's record before it applies
// the step, so no decision exists that the log does not hold. [Decoder]
// is the one reading of a record as a step, and [LogSessions] reads a
// log as its sessions' events.
package audit
