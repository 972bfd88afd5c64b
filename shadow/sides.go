package shadow

import (
	"fmt"
	"reflect"
	"time"

	"bailiff/audit"
	"bailiff/engine"
)

// sides is the candidates' side of one session being compared. It
// follows the baseline's history step by step: each candidate decides
// every call on that history, and its verdict waits in the call's pair
// for a grant to settle. compareSessions tells it a trace's history as
// the baseline makes it; for an audit log verify does, as it applies each
// record (a Follower).
//
// A candidate whose state would be the baseline's (a variant of the
// baseline policy, as ablation's are) decides on the baseline session's
// own state, which the history keeps: only a candidate that keeps its
// state by other rules (other trusted sources or contracts) replays the
// history in a session of its own. Its decisions are the same either
// way; ablation's variants then cost a decision each, not a replay.
type sides struct {
	cands   []*engine.Policy
	remap   Remap
	file    string
	session string
	fn      func(int, Pair)
	base    *audit.Session   // the baseline's session, which its driver keeps
	own     []*audit.Session // by candidate: its own session, nil on base's state
	ledgers []*audit.Ledger  // by candidate: where its own sessions count together
	// pairs holds, by candidate, the pairs of the session's calls from
	// number first on, of which the head first are handed on already
	// and ready more are final; asked says which wait for a grant. Pairs
	// are handed on once they and every pair before them are final
	// (handOn), so a long session holds only what follows its oldest
	// unanswered ask (it held every call, with its arguments, until its
	// end).
	pairs [][]Pair
	asked []bool
	first int
	head  int
	ready int
	moved int            // calls whose pairs were moved down (compact), for the tests
	index map[string]int // an asked call's number, the same in every candidate's
	err   error          // the first failure: the session's pairs are incomplete
}

func newSides(cands []*engine.Policy, ledgers []*audit.Ledger, remap Remap, file string, fn func(int, Pair)) *sides {
	sd := &sides{cands: cands, ledgers: ledgers, remap: remap, file: file, fn: fn, own: make([]*audit.Session, len(cands))}
	for range cands {
		sd.pairs = append(sd.pairs, pooledPairs())
	}
	return sd
}

// start opens every candidate's side of the session base starts, as body
// records it. Call and settle must then be told a step before base
// applies it, and the others after.
func (sd *sides) start(now time.Time, base *audit.Session, body *audit.SessionBody) {
	sd.session, sd.base = base.ID(), base
	principal, remapped := body.Principal, false
	if sd.remap != nil {
		principal = sd.remap(body.Principal)
		remapped = !reflect.DeepEqual(principal, body.Principal)
	}
	for i, c := range sd.cands {
		if base.Policy().SharesState(c) && !remapped {
			continue
		}
		sd.own[i], _ = audit.Start(audit.Config{Policy: c, Spill: true, Ledger: sd.ledgers[i]}, now, base.ID(),
			&audit.SessionBody{Server: body.Server, Principal: principal, Tools: body.Tools})
	}
}

// call has every candidate decide call c, made at pos, on the history so
// far, and then follows the history: the baseline decided db.
func (sd *sides) call(now time.Time, pos int, label string, c *engine.Call, db engine.Decision) error {
	if sd.index == nil {
		sd.index = map[string]int{}
	}
	for i, cand := range sd.cands {
		var dc engine.Decision
		s := sd.own[i]
		if s != nil {
			dc = s.Decide(c, now)
		} else {
			s = sd.base
			dc = s.DecideAs(cand, c, now)
		}
		if err := s.Err(); err != nil {
			return err
		}
		sd.pairs[i] = append(sd.pairs[i], Pair{File: sd.file, Session: sd.session, Pos: pos, ID: c.ID, Tool: c.Tool, Label: label, Baseline: db, Candidate: dc,
			Args: c.Args, Redacted: redactedPaths(c.Redacted)})
	}
	for _, s := range sd.own {
		if s == nil {
			continue
		}
		if _, err := s.Call(now, c, db, nil); err != nil {
			return err
		}
	}
	if len(sd.cands) == 0 {
		return nil
	}
	// Only a call the baseline asked waits for a grant (settle): any
	// other pair is final as it is made.
	waits := db.Verdict == engine.Ask
	sd.asked = append(sd.asked, waits)
	if waits {
		sd.index[c.ID] = sd.first + len(sd.asked) - 1
		return nil
	}
	sd.handOn(false)
	return nil
}

// handOnBatch is how many final pairs wait to be handed on together: the
// sessions of a log are compared on several workers, which share where
// the pairs go, and a pair handed on at each call had them take turns at
// it (shadow 15% slower); a batch is handed on as a session's pairs were.
const handOnBatch = 256

// handOn hands on, in call order, the pairs that are final with every
// pair before them once there are handOnBatch, or, all, every pair held.
func (sd *sides) handOn(all bool) {
	// A pair once final stays final: the run goes on from where it was
	// last seen to end, not from the head again.
	for sd.head+sd.ready < len(sd.asked) && (all || !sd.asked[sd.head+sd.ready]) {
		sd.ready++
	}
	n := sd.ready
	if n == 0 || !all && n < handOnBatch {
		return
	}
	for i, ps := range sd.pairs {
		for _, p := range ps[sd.head : sd.head+n] {
			sd.fn(i, p)
		}
		clear(ps[sd.head : sd.head+n]) // fn took copies
	}
	sd.head += n
	sd.ready = 0
	sd.compact()
}

// compact moves the pairs still held to the front of their arrays once
// they are no more than those handed on, so that each pair is moved
// at most about once: moving them at every hand-on cost the square of
// the calls held behind an ask answered late. The arrays are filled
// again by the calls that follow.
func (sd *sides) compact() {
	if sd.head < len(sd.asked)-sd.head {
		return
	}
	for i, ps := range sd.pairs {
		rest := copy(ps, ps[sd.head:])
		clear(ps[rest:])
		sd.pairs[i] = ps[:rest]
	}
	rest := copy(sd.asked, sd.asked[sd.head:])
	sd.asked = sd.asked[:rest]
	sd.moved += rest
	sd.first += sd.head
	sd.head = 0
}

// grant keeps g, for a later identical call, on every side.
func (sd *sides) grant(now time.Time, g engine.Grant) {
	for _, s := range sd.own {
		if s != nil {
			s.Grant(now, g, nil)
		}
	}
}

// settle answers the asked call with grant g: the baseline settled it as
// db; a candidate that asked it too is answered by the same grant.
func (sd *sides) settle(now time.Time, call string, g engine.Grant, db engine.Decision) error {
	n, ok := sd.index[call]
	if !ok {
		return fmt.Errorf("grant answers call %q, which session %q has not made", call, sd.session)
	}
	at := n - sd.first
	for i, cand := range sd.cands {
		s := sd.own[i]
		if s == nil {
			s = sd.base
		}
		pc, err := s.Lookup(call)
		if err != nil {
			return err
		}
		p := &sd.pairs[i][at]
		p.Baseline = db
		if p.Candidate.Verdict == engine.Ask && !p.Candidate.Unevaluable {
			p.Candidate = s.AnswerAs(cand, pc, p.Candidate, g, now)
		}
		if sd.own[i] != nil {
			if err := s.Settle(now, pc, db, nil); err != nil {
				return err
			}
		}
	}
	delete(sd.index, call)
	sd.asked[at] = false
	sd.handOn(false)
	return nil
}

// result gives every side of its own what the call brought.
func (sd *sides) result(now time.Time, pos int, body *audit.ResultBody, out *audit.Output) {
	for _, s := range sd.own {
		if s != nil {
			s.Result(now, pos, body, out)
		}
	}
}

// tools applies a tools record on every side of its own: an acceptance
// the session may not take is history too, which no side applies.
func (sd *sides) tools(now time.Time, body *audit.ToolsBody) {
	for _, s := range sd.own {
		if s != nil {
			s.Tools(now, body)
		}
	}
}

// flush hands the session's pairs on and closes its sides, ready for the
// next session.
func (sd *sides) flush() {
	sd.handOn(true)
	sd.index, sd.first, sd.head, sd.ready = nil, 0, 0, 0
	sd.close()
}

// close closes the candidates' own sessions; base is its driver's.
func (sd *sides) close() {
	for i, s := range sd.own {
		if s != nil {
			s.Close()
		}
		sd.own[i] = nil
	}
	sd.base = nil
}

// recycle gives the pair arrays back, once the sides are done with.
func (sd *sides) recycle() {
	sd.close()
	for _, ps := range sd.pairs {
		recyclePairs(ps)
	}
	sd.pairs = nil
}

// redactedPaths are a call's redacted argument paths as written.
func redactedPaths(ps []engine.Path) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}
