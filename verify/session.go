package verify

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
)

// sessionSet is the sessions one worker verifies.
type sessionSet struct {
	v           *verifier
	sessions    map[string]*vsession
	findings    []Finding
	unevaluable []Unevaluable
	calls       int
	contents    int   // result records that refer to content
	failed      error // an internal error: the set's results are incomplete
	// fatal is a spill file that failed: decisions after it cannot be
	// trusted either way, so the log cannot be verified.
	fatal error
}

// close gives back the spilled output of the sessions that never ended.
func (set *sessionSet) close() {
	for _, vs := range set.sessions {
		if vs.s != nil {
			vs.s.Close()
			vs.s = nil
		}
		if vs.f != nil {
			if err := safeEnd(vs.f); err != nil && set.failed == nil {
				set.failed = err
			}
			vs.f = nil
		}
	}
}

// safeRecord feeds one record to its session, turning a panic into an
// error that names the record.
func safeRecord(set *sessionSet, rec chain.Record) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error at record %d (session %q): %v", rec.Seq, rec.Session, r)
		}
	}()
	set.record(rec)
	return nil
}

// safeEnd ends a follower of a session the log never ended, turning a
// panic into an error, as safeRecord does for the sessions' records.
func safeEnd(f Follower) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error ending a session at the end of the log: %v", r)
		}
	}()
	f.End()
	return nil
}

type vsession struct {
	s      *audit.Session // nil when the session record was unusable
	f      Follower       // nil when nothing follows it
	ended  bool
	broken bool // its policy could not be loaded: its calls cannot be judged
	// given and used are the session's grants by id: the call each was
	// given for and the call a recorded decision used it on.
	given map[string]string
	used  map[string]string
	// approvers are the approver keys the session trusts; elicited the
	// asked calls the gateway put to the client, asked when each call was
	// recorded; refused the grants whose signature failed, and why.
	approvers []string
	elicited  map[string]bool
	asked     map[string]time.Time
	refused   map[string]string
	// lost names the outputs the engine counts as purged that were in
	// truth missing or altered, so a decision that depended on one says
	// which.
	lost map[string]string
}

// lose notes that the output src is unknown because its evidence is
// missing or altered (how), not purged.
func (vs *vsession) lose(src engine.Source, how string) {
	if vs.lost == nil {
		vs.lost = map[string]string{}
	}
	vs.lost["purged "+src.String()] = how + " " + src.String()
}

func (set *sessionSet) find(rec chain.Record, call, kind, recorded, recomputed, reason string) {
	set.findings = append(set.findings, Finding{File: set.v.file, Seq: rec.Seq, Session: rec.Session, Call: call,
		Kind: kind, Recorded: recorded, Recomputed: recomputed, Reason: reason})
}

func (set *sessionSet) record(rec chain.Record) {
	if set.fatal != nil {
		return
	}
	vs := set.sessions[rec.Session]
	if rec.Kind == chain.KindSession {
		if vs != nil {
			set.find(rec, "", FindRecord, "", "", fmt.Sprintf("session %q starts twice", rec.Session))
			return
		}
		set.sessions[rec.Session] = set.open(rec)
		return
	}
	switch {
	case vs == nil:
		set.find(rec, "", FindRecord, "", "", fmt.Sprintf("%s record for session %q, which has no session record before it", rec.Kind, rec.Session))
		return
	case vs.ended:
		set.find(rec, "", FindRecord, "", "", fmt.Sprintf("%s record after session %q ended", rec.Kind, rec.Session))
		return
	case vs.broken:
		// The session's one finding says why; its calls are counted, not
		// judged.
		if rec.Kind == chain.KindCall {
			set.calls++
		}
		return
	}
	var err error
	switch rec.Kind {
	case chain.KindTools:
		var b audit.ToolsBody
		if err = chain.DecodeBody(rec.Body, &b); err == nil {
			if len(b.Accept) > 0 && vs.s.State().MayAccept(b.AcceptedBy) {
				if problem := vs.acceptProblem(rec, &b); problem != "" {
					set.find(rec, "", FindGrant, b.AcceptedBy, "not accepted", problem+": not applied")
					b.Accept = nil
				}
			}
			if errors.Is(vs.s.Tools(rec.TS, &b), audit.ErrAcceptRefused) {
				set.find(rec, "", FindGrant, b.AcceptedBy, "", "changed tool definitions were accepted by nobody, or by the principal itself: not applied")
			}
			if vs.f != nil {
				vs.f.Tools(rec.TS, &b)
			}
		}
	case chain.KindCall:
		set.calls++
		err = set.call(vs, rec)
	case chain.KindGrant:
		err = set.grant(vs, rec)
	case chain.KindResult:
		err = set.result(vs, rec)
	case chain.KindEnd:
		var b audit.EndBody
		err = chain.DecodeBody(rec.Body, &b)
		// Keep the entry, to catch records after the end, but not the
		// state: a long log must not hold every session's output.
		vs.s.End(rec.TS, &b)
		if vs.f != nil {
			vs.f.End()
		}
		vs.ended, vs.s, vs.f, vs.given, vs.used = true, nil, nil, nil, nil
		vs.elicited, vs.asked, vs.refused = nil, nil, nil
	}
	if vs.s != nil && vs.s.Err() != nil {
		set.fatal = vs.s.Err()
	}
	if err != nil {
		set.find(rec, "", FindRecord, "", "", fmt.Sprintf("%s record: %v", rec.Kind, err))
	}
}

func (set *sessionSet) open(rec chain.Record) *vsession {
	var b audit.SessionBody
	if err := chain.DecodeBody(rec.Body, &b); err != nil {
		set.find(rec, "", FindRecord, "", "", fmt.Sprintf("session record: %v", err))
		return &vsession{broken: true}
	}
	if b.Engine != engine.Version {
		// Recomputing under other semantics proves nothing either way.
		set.find(rec, "", FindPolicy, b.Engine, engine.Version,
			fmt.Sprintf("the session was decided by engine %q and this is %q: its verdicts are not recomputed", b.Engine, engine.Version))
		return &vsession{broken: true}
	}
	p, problem := set.v.cache.Policy(b.Policy, b.PolicyVersion)
	if problem != "" {
		set.find(rec, "", FindPolicy, b.PolicyVersion, "", problem)
		return &vsession{broken: true}
	}
	approvers := b.Approvers
	if set.v.approvers != nil {
		approvers = nil
		for _, k := range b.Approvers {
			if slices.Contains(set.v.approvers, k) {
				approvers = append(approvers, k)
				continue
			}
			set.find(rec, "", FindGrant, k, "", fmt.Sprintf("the session trusts approver key %s, which is not one of the keys verify was given: it approves nothing", k))
		}
	}
	s, _ := audit.Start(audit.Config{Policy: p, Spill: true}, rec.TS, rec.Session, &b)
	var f Follower
	if set.v.follow != nil {
		f = set.v.follow(s, rec.TS, &b)
	}
	return &vsession{s: s, f: f,
		given: map[string]string{}, used: map[string]string{}, approvers: approvers,
		elicited: map[string]bool{}, asked: map[string]time.Time{}, refused: map[string]string{}}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
