package verify

import (
	"time"

	"bailiff/audit"
	"bailiff/engine"
)

// Follower is told a session's history as verify applies it: every call
// with its recorded decision, every grant kept or settled, every result
// and every tools record, then the end. It is how another reading of the
// log (shadow scoring a candidate policy on the same history) rides on
// the pass that verifies it, instead of reading and decoding the log a
// second time. A follower is told only what verify itself applied: a
// record verify could not apply (a finding) is not passed on, so a
// follower's result stands only for a log with no findings.
//
// A call and a settling grant are told before verify applies them to
// the session, the other steps after: a follower may decide on the
// session's own state (it must never drive it), which is then the state
// the recorded decision was made on. Each session's follower is told its
// steps in log order on one goroutine; followers of different sessions
// run concurrently.
type Follower interface {
	Call(now time.Time, seq int64, c *engine.Call, recorded engine.Decision)
	// Grant is a grant kept for a later identical call.
	Grant(now time.Time, g engine.Grant)
	// Settle is the asked call's answer: grant g, settling it as recorded.
	Settle(now time.Time, call string, g engine.Grant, recorded engine.Decision)
	Result(now time.Time, pos int, body *audit.ResultBody, out *audit.Output)
	Tools(now time.Time, body *audit.ToolsBody)
	// End is the session's end, or the end of the log for a session that
	// never ended.
	End()
}

// FollowFunc opens the follower of a session as it starts, given the
// session verify drives (under the policy it was recorded under) and its
// session record; nil follows nothing.
type FollowFunc func(s *audit.Session, now time.Time, body *audit.SessionBody) Follower
