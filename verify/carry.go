package verify

import (
	"fmt"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
)

// An approval may be taken up by a later session of the same log (the
// gateway restarted, or a client came back in a new session): its grant
// record names the session it was asked in (From). Sessions are verified
// apart, by several workers, so what must hold across them is checked
// once all are done, from these facts each worker keeps.
type (
	// askFact is a call a session recorded as asked.
	askFact struct {
		ref       engine.ToolRef
		digest    string
		at        time.Time
		seq       int64
		principal string
	}
	// carryFact is a grant a session took up from another.
	carryFact struct {
		grant, from, call string
		ref               engine.ToolRef
		digest            string
		signed            time.Time
		principal         string
		rec               chain.Record
	}
	// useFact is a decision that used a signed grant.
	useFact struct {
		grant, call string
		rec         chain.Record
	}
)

// ledger is what one worker saw of asks, carried grants and uses.
type ledger struct {
	asks    map[[2]string]askFact // by session and call
	carries []carryFact
	uses    []useFact
}

func (l *ledger) ask(session, call string, f askFact) {
	if l.asks == nil {
		l.asks = map[[2]string]askFact{}
	}
	l.asks[[2]string{session, call}] = f
}

// noteAsk keeps a call the gateway recorded as asked, should a later
// session take up its approval.
func (set *sessionSet) noteAsk(s *audit.Session, b *audit.CallBody, ref engine.ToolRef) {
	if b.Decision.Verdict != string(engine.Ask) {
		return
	}
	set.ledger.ask(set.rec.Session, b.Call, askFact{ref: ref, digest: b.Digest, at: set.rec.TS, seq: set.rec.Seq, principal: s.State().Principal.Subject})
}

// noteCarry keeps a grant taken up from another session.
func (set *sessionSet) noteCarry(s *audit.Session, b *audit.GrantBody, server string) {
	signed, _ := time.Parse(chain.TimeFormat, b.Signature.Time)
	set.ledger.carries = append(set.ledger.carries, carryFact{grant: b.Grant, from: b.From, call: b.Call,
		ref: engine.ToolRef{Server: server, Tool: b.Tool}, digest: b.Digest, signed: signed,
		principal: s.State().Principal.Subject, rec: set.rec})
}

// crossCheck reports, across every worker's sessions, a grant taken up
// from a session that did not ask it (that call, tool, digest, for that
// principal, before it was signed), and a signed grant used by more than
// one call in the log.
func crossCheck(sets []*sessionSet, file string) []Finding {
	asks := map[[2]string]askFact{}
	for _, set := range sets {
		for k, f := range set.ledger.asks {
			asks[k] = f
		}
	}
	var out []Finding
	find := func(rec chain.Record, call, reason string) {
		out = append(out, Finding{File: file, Seq: rec.Seq, Session: rec.Session, Call: call, Kind: FindGrant, Reason: reason})
	}
	for _, set := range sets {
		for _, c := range set.ledger.carries {
			a, ok := asks[[2]string{c.from, c.call}]
			what := fmt.Sprintf("grant %s, taken up from session %s", c.grant, c.from)
			switch {
			case !ok:
				find(c.rec, c.call, what+": that session recorded no asked call "+c.call)
			case a.seq > c.rec.Seq:
				find(c.rec, c.call, fmt.Sprintf("%s: that session's call %s comes later in the log than the grant", what, c.call))
			case a.ref != c.ref || a.digest != c.digest:
				find(c.rec, c.call, fmt.Sprintf("%s: it is for %s (%s), but call %s asked %s (%s)", what, c.ref, c.digest, c.call, a.ref, a.digest))
			case a.principal != c.principal:
				find(c.rec, c.call, fmt.Sprintf("%s: that session acted for %q, this one for %q: an approval is for the principal it was asked for", what, a.principal, c.principal))
			case c.signed.Before(a.at.Truncate(time.Second)):
				find(c.rec, c.call, fmt.Sprintf("%s: it was signed at %s, before the call was asked", what, c.signed.UTC().Format(chain.TimeFormat)))
			}
		}
	}
	first := map[string]useFact{}
	for _, set := range sets {
		for _, u := range set.ledger.uses {
			f, seen := first[u.grant]
			if !seen || u.rec.Seq < f.rec.Seq {
				first[u.grant] = u
			}
		}
	}
	for _, set := range sets {
		for _, u := range set.ledger.uses {
			// A second use in the same session is the recomputed
			// decision's finding already.
			if f := first[u.grant]; f.rec.Seq != u.rec.Seq && f.rec.Session != u.rec.Session {
				find(u.rec, u.call, fmt.Sprintf("grant %s was already used by call %s of session %s: an approval is used once", u.grant, f.call, f.rec.Session))
			}
		}
	}
	return out
}

// crossLogUses reports a signed grant used in more than one of the logs
// read together: replicas sharing a state database keep a log each, and
// an approval is used once across all of them. The first use in time
// stands; each use in another log is that log's finding. (Uses within
// one log are crossCheck's.)
func crossLogUses(p *pool, reps []*Report) {
	if len(reps) < 2 {
		return
	}
	type use struct {
		useFact
		log int
	}
	first := map[string]use{}
	var all []use
	for i := range reps {
		for w := range p.results {
			for _, u := range p.results[w][i].ledger.uses {
				all = append(all, use{u, i})
				if f, seen := first[u.grant]; !seen || u.rec.TS.Before(f.rec.TS) {
					first[u.grant] = use{u, i}
				}
			}
		}
	}
	for _, u := range all {
		if f := first[u.grant]; f.log != u.log {
			reps[u.log].Findings = append(reps[u.log].Findings, Finding{File: reps[u.log].File, Seq: u.rec.Seq, Session: u.rec.Session,
				Call: u.call, Kind: FindGrant, Reason: fmt.Sprintf("grant %s was already used by call %s of session %s in %s: an approval is used once, across every log that shares it",
					u.grant, f.call, f.rec.Session, reps[f.log].File)})
		}
	}
}
