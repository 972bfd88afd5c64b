package shadow

import (
	"fmt"
	"sync"
	"time"

	"bailiff/audit"
	"bailiff/engine"
)

// Follow opens the candidates' side of one session of an audit log as
// verify starts it, given the policy it was recorded under: the
// verify.FollowFunc an Input's Verify is given, so that one read of the
// log both verifies it and scores the candidates on it. It returns nil
// for a session it will not follow, having failed the comparison.
type Follow func(s *audit.Session, now time.Time, body *audit.SessionBody) *Follower

// Follower is the candidates' side of one session of an audit log, told
// the session's history by verify as verify applies it (a
// verify.Follower): the baseline is the recorded verdicts, so verify's own
// replay of the session is the history the candidates follow, the log is
// read and decoded once, and a variant of the recorded policy decides on
// verify's own state of the session.
type Follower struct {
	sd *sides
	sc *scorer
}

// Call has the candidates decide the call, recorded at seq.
func (f *Follower) Call(now time.Time, seq int64, c *engine.Call, recorded engine.Decision) {
	if f.sd.err == nil {
		f.sd.err = f.sd.call(now, int(seq), "", c, recorded)
	}
}

// Grant keeps a grant for a later identical call.
func (f *Follower) Grant(now time.Time, g engine.Grant) {
	if f.sd.err == nil {
		f.sd.grant(now, g)
	}
}

// Settle answers an asked call with grant g, settled as recorded.
func (f *Follower) Settle(now time.Time, call string, g engine.Grant, recorded engine.Decision) {
	if f.sd.err == nil {
		f.sd.err = f.sd.settle(now, call, g, recorded)
	}
}

// Result gives the candidates what a call brought.
func (f *Follower) Result(now time.Time, pos int, body *audit.ResultBody, out *audit.Output) {
	if f.sd.err == nil {
		f.sd.result(now, pos, body, out)
	}
}

// Tools applies a tools record.
func (f *Follower) Tools(now time.Time, body *audit.ToolsBody) {
	if f.sd.err == nil {
		f.sd.tools(now, body)
	}
}

// End hands the session's pairs on, or fails the comparison with what
// went wrong in it: a table that silently lost a session would be a lie.
func (f *Follower) End() {
	if f.sd.err != nil {
		f.sc.fail(fmt.Errorf("%s: session %s: %w", f.sc.name, f.sd.session, f.sd.err))
	} else {
		f.sd.flush()
	}
	f.sd.recycle()
}

// scorer is what the followers of one log's sessions share: the
// candidates, the pairs' destination, and the session ids seen in every
// input, since verify's workers open sessions concurrently.
type scorer struct {
	name    string
	cands   []Candidate
	ledgers []*audit.Ledger // by candidate, for its own sessions
	remap   Remap
	fn      func(int, Pair)
	// mu guards fn, seen and err, which the scorers of logs verified
	// together share.
	mu    *sync.Mutex
	seen  map[string]string
	order map[string]int // the logs' places among the inputs
	err   *error
}

func (sc *scorer) fail(err error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	// Sessions are followed concurrently: of several failures, the one
	// kept is the first by its text, so a run says the same every time.
	if *sc.err == nil || err.Error() < (*sc.err).Error() {
		*sc.err = err
	}
}

func (sc *scorer) emit(i int, p Pair) {
	sc.mu.Lock()
	sc.fn(i, p)
	sc.mu.Unlock()
}

// follow is the log's Follow.
func (sc *scorer) follow(base *audit.Session, now time.Time, body *audit.SessionBody) *Follower {
	session, p := base.ID(), base.Policy()
	sc.mu.Lock()
	prev, dup := sc.seen[session]
	if !dup {
		sc.seen[session] = sc.name
	}
	sc.mu.Unlock()
	if dup && prev != sc.name {
		first, second := prev, sc.name
		if sc.order[first] > sc.order[second] {
			// Logs verified together open their sessions concurrently:
			// the message names them in the order they were given.
			first, second = second, first
		}
		sc.fail(fmt.Errorf("session %s is in both %s and %s: one session in two logs would be counted twice (are they copies, or two gateways reusing ids?)", session, first, second))
		return nil
	}
	cs := make([]*engine.Policy, len(sc.cands))
	for i, cand := range sc.cands {
		c, err := cand(p)
		if err != nil {
			sc.fail(err)
			return nil
		}
		cs[i] = c
	}
	sd := newSides(cs, sc.ledgers, sc.remap, sc.name, sc.emit)
	sd.start(now, base, body)
	return &Follower{sd: sd, sc: sc}
}

// followLogs compares the audit logs among inputs that are verified
// together, in the one pass their Together makes over them. Sessions that
// count across sessions are taken in time order across all of them, on
// one ledger per candidate.
func followLogs(inputs []Input, cands []Candidate, remap Remap, seen map[string]string, fn func(int, Pair)) error {
	var (
		mu      sync.Mutex
		err     error
		follows []Follow
		first   *Input
	)
	ledgers := newLedgers(len(cands))
	order := map[string]int{}
	for i, in := range inputs {
		order[in.Name] = i
	}
	for i := range inputs {
		in := &inputs[i]
		if in.Trace != nil || in.Together == nil {
			continue
		}
		if first == nil {
			first = in
		}
		sc := &scorer{name: in.Name, cands: cands, ledgers: ledgers, remap: remap, fn: fn, seen: seen, order: order, mu: &mu, err: &err}
		follows = append(follows, sc.follow)
	}
	ordered := func(p *engine.Policy) bool { return counts(p, cands) }
	if verr := first.Together(follows, ordered); verr != nil {
		return verr
	}
	return err
}
