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

// sessionSet is the sessions one worker verifies: audit's driver walks
// them, recomputing every recorded decision, and the set observes it,
// reporting what does not hold.
type sessionSet struct {
	v           *verifier
	d           *audit.Driver
	sessions    map[string]*vsession // the sessions open, by id
	started     int                  // sessions with a session record, judged or not
	findings    []Finding
	unevaluable []Unevaluable
	calls       int
	contents    int   // result records that refer to content
	failed      error // an internal error: the set's results are incomplete
	// fatal is a spill file that failed: decisions after it cannot be
	// trusted either way, so the log cannot be verified.
	fatal error
	// ledger is what must be checked across sessions (carry.go).
	ledger ledger

	dec  audit.Decoder
	rec  chain.Record // the record being stepped
	vs   *vsession    // its session's
	held int64        // evidence bytes held in flight for it
}

func newSessionSet(v *verifier, ledger *audit.Ledger) *sessionSet {
	set := &sessionSet{v: v, sessions: map[string]*vsession{}}
	set.d = &audit.Driver{Config: audit.Config{Spill: true, Ledger: ledger}, Interleaved: true, Recompute: true, Observer: set}
	return set
}

// errSkip is a record the set reported and the driver must not take.
var errSkip = errors.New("skipped")

// close gives back the spilled output of the sessions that never ended.
func (set *sessionSet) close() {
	set.d.Close()
	for id, vs := range set.sessions {
		if vs.f != nil {
			if err := safeEnd(vs.f); err != nil && set.failed == nil {
				set.failed = err
			}
		}
		delete(set.sessions, id)
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
	f Follower // nil when nothing follows it
	// given and used are the session's grants by id: the call each was
	// given for and the call a recorded decision used it on.
	given map[string]string
	used  map[string]string
	// signed are the grants given with a signature: each is used once
	// in the whole log, whichever session takes it up.
	signed map[string]bool
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

// record has the driver take one record, and reports what it refuses.
func (set *sessionSet) record(rec chain.Record) {
	if set.fatal != nil {
		return
	}
	ev, err := set.dec.Decode(rec)
	if errors.Is(err, audit.ErrNoStep) {
		return
	}
	set.rec, set.vs = rec, set.sessions[rec.Session]
	if cerr := set.d.Check(ev); cerr != nil {
		var se *audit.StepError
		switch {
		case errors.Is(cerr, audit.ErrUnjudged) && ev.Call != nil:
			set.calls++ // the session's one finding says why: its calls are counted, not judged
		case errors.As(cerr, &se):
			set.find(rec, "", FindRecord, "", "", se.Error())
		}
		return
	}
	if ev.Start != nil {
		set.started++
	}
	if ev.Call != nil {
		set.calls++
	}
	if ev.Result != nil && ev.Result.Body.Content != "" {
		set.contents++
	}
	switch {
	case err != nil && ev.Start != nil:
		set.find(rec, "", FindRecord, "", "", fmt.Sprintf("session record: %v", err))
		err = set.d.Step(&audit.Event{Session: rec.Session, Start: &audit.StartStep{ID: rec.Session, Unjudged: true}})
	case err != nil && ev.End != nil:
		// An end whose body cannot be read still ends its session.
		set.find(rec, "", FindRecord, "", "", fmt.Sprintf("%s record: %v", rec.Kind, err))
		err = set.d.Step(ev)
	case err != nil:
		set.find(rec, "", FindRecord, "", "", fmt.Sprintf("%s record: %v", rec.Kind, err))
		return
	case ev.Start != nil:
		err = set.start(ev)
	default:
		err = set.d.Step(ev)
	}
	if set.held > 0 {
		inFlight.Release(set.held)
		set.held = 0
	}
	if s := set.d.Session(rec.Session); s != nil && s.Err() != nil {
		set.fatal = s.Err()
	}
	set.refused(ev, err)
}

// refused reports a record the driver did not take.
func (set *sessionSet) refused(ev *audit.Event, err error) {
	var se *audit.StepError
	switch {
	case err == nil, errors.Is(err, errSkip), errors.Is(err, audit.ErrUnjudged):
	case errors.As(err, &se) && se.Step == "grant":
		set.find(set.rec, ev.Grant.Call, FindGrant, "", "", se.Error())
	default:
		set.find(set.rec, "", FindRecord, "", "", fmt.Sprintf("%s record: %v", set.rec.Kind, err))
	}
}

// start starts a session as its record says, unjudged when its engine or
// policy is not the one it was decided under.
func (set *sessionSet) start(ev *audit.Event) error {
	rec, b := set.rec, ev.Start.Body
	unjudged := func() error {
		return set.d.Step(&audit.Event{Session: rec.Session, Start: &audit.StartStep{ID: rec.Session, Unjudged: true}})
	}
	if b.Engine != engine.Version {
		// Recomputing under other semantics proves nothing either way.
		set.find(rec, "", FindPolicy, b.Engine, engine.Version,
			fmt.Sprintf("the session was decided by engine %q and this is %q: its verdicts are not recomputed", b.Engine, engine.Version))
		return unjudged()
	}
	p, problem := set.v.cache.Policy(b.Policy, b.PolicyVersion)
	if problem != "" {
		set.find(rec, "", FindPolicy, b.PolicyVersion, "", problem)
		return unjudged()
	}
	ev.Start.Policy = p
	return set.d.Step(ev)
}

// Started opens verify's side of a session: the approver keys it trusts,
// and its follower.
func (set *sessionSet) Started(s *audit.Session, ev *audit.Event) error {
	rec, b := set.rec, ev.Start.Body
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
	var f Follower
	if set.v.follow != nil {
		f = set.v.follow(s, rec.TS, b)
	}
	set.sessions[rec.Session] = &vsession{f: f,
		given: map[string]string{}, used: map[string]string{}, signed: map[string]bool{}, approvers: approvers,
		elicited: map[string]bool{}, asked: map[string]time.Time{}, refused: map[string]string{}}
	return nil
}

// Prepare checks what a record claims before the driver takes it.
func (set *sessionSet) Prepare(s *audit.Session, ev *audit.Event, g *engine.Grant) error {
	switch {
	case ev.Call != nil:
		set.checkCall(ev.Call)
	case ev.Grant != nil:
		return set.checkGrant(s, ev.Grant, g)
	case ev.Result != nil:
		return set.loadResult(s, ev.Result)
	case ev.Tools != nil:
		b := ev.Tools
		if len(b.Accept) > 0 && s.State().MayAccept(b.AcceptedBy) {
			if problem := set.vs.acceptProblem(s, set.rec, b); problem != "" {
				set.find(set.rec, "", FindGrant, b.AcceptedBy, "not accepted", problem+": not applied")
				b.Accept = nil
			}
		}
	}
	return nil
}

func (set *sessionSet) ToolsListed(_ *audit.Session, ev *audit.Event, refused bool) error {
	if refused {
		set.find(set.rec, "", FindGrant, ev.Tools.AcceptedBy, "", "changed tool definitions were accepted by nobody, or by the principal itself: not applied")
	}
	if f := set.vs.f; f != nil {
		f.Tools(ev.At, ev.Tools)
	}
	return nil
}

func (set *sessionSet) Resulted(_ *audit.Session, ev *audit.Event, src engine.Source) error {
	if f := set.vs.f; f != nil {
		f.Result(ev.At, src.Pos, ev.Result.Body, ev.Result.Out)
	}
	return nil
}

// Ended keeps nothing of the session: a long log must not hold every
// session's state.
func (set *sessionSet) Ended(s *audit.Session, _ *audit.Event) error {
	if f := set.vs.f; f != nil {
		f.End()
	}
	delete(set.sessions, s.ID())
	return nil
}
