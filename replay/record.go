package replay

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
)

// Recorder writes the audit log the live proxy would have written for a
// trace: one session record per start, a call record per decision, grant,
// result and end records, and each output's content in the evidence
// store. Deciding runs under the same rules as Run, with positions
// counted in record seqs, so a verify of the log recomputes the same
// decisions.
type Recorder struct {
	Policy   *engine.Policy
	Log      *chain.Writer
	Evidence chain.Evidence
	// Secret keys the digest of calls whose arguments were redacted. It
	// must be set when the policy redacts anything a call holds.
	Secret []byte
	// Sync makes evidence writes durable before their result record.
	Sync bool
	// Epoch replaces replay.Epoch as the clock of events without "at".
	Epoch time.Time
	// Approvers are the approvers' private keys, by name: a trace's grant
	// is signed with its approver's key, as the live gateway records an
	// out-of-band answer, and every session trusts their public keys. A
	// grant by "elicitation" is recorded as answered through the client,
	// unsigned; one by any other approver without a key is refused.
	Approvers map[string]string

	seen map[string]bool // sessions recorded, across traces
	cur  *stepper        // the session Step is in, nil between sessions
	// clock is the file the last event came from and the line of its
	// first event with "at" (timed) and without (untimed), 0 for none.
	clock          string
	timed, untimed int
	// base is the lines of the files before this one, so that --clock
	// runs on across files instead of starting again at each; line is
	// the last line of this one.
	base, line int
	// last is the time of the last event written: a log's times only go
	// forward, and verify would report one that goes back.
	last     time.Time
	lastFile string
	lastLine int
}

// Record writes the events of one trace file.
func (r *Recorder) Record(file string, events []Event) error {
	r.Close()
	defer r.Close()
	for i := range events {
		var next *Event
		if i+1 < len(events) {
			next = &events[i+1]
		}
		if err := r.Step(file, &events[i], next); err != nil {
			return err
		}
	}
	return nil
}

// Close forgets the session Step is in, if it did not end, and gives its
// spilled output back.
func (r *Recorder) Close() {
	if r.cur != nil {
		r.cur.close()
		r.cur = nil
	}
}

// Step writes one event of a trace file, so that a generator can record
// a session larger than memory without holding its events (Record holds
// a whole file's). next is the event after it, if any: a grant by
// "elicitation" right after its call is the client answering in band.
func (r *Recorder) Step(file string, ev, next *Event) error {
	fail := func(format string, a ...any) error {
		return &SyntaxError{File: file, Line: ev.Line, Reason: fmt.Sprintf(format, a...)}
	}
	if err := r.checkClock(file, ev, fail); err != nil {
		return err
	}
	if err := r.forward(file, ev, fail); err != nil {
		return err
	}
	s := r.cur
	if ev.Start != nil {
		if s != nil {
			return fail("session %q starts before session %q ended", ev.Start.Session, s.state.Session)
		}
		st := ev.Start
		if r.seen == nil {
			r.seen = map[string]bool{}
		}
		if r.seen[st.Session] {
			return fail("session %q is already in the log: session ids must be unique", st.Session)
		}
		r.seen[st.Session] = true
		body := &audit.SessionBody{Server: st.Server, Principal: st.Principal,
			PolicyVersion: r.Policy.Version(), Policy: string(r.Policy.Canonical()),
			Tools: st.Tools, Engine: engine.Version}
		for _, name := range slices.Sorted(maps.Keys(r.Approvers)) {
			pub, err := chain.PublicKey(r.Approvers[name])
			if err != nil {
				return fmt.Errorf("approver %s: %v", name, err)
			}
			body.Approvers = append(body.Approvers, pub)
		}
		r.cur = newStepper(r.Policy, st.Session, st.Server, st.Principal, st.Tools)
		return r.append(r.time(ev), st.Session, chain.KindSession, body)
	}
	if s == nil {
		return fail("event before any start")
	}
	now := r.time(ev)
	session := s.state.Session
	var err error
	switch {
	case ev.Call != nil:
		elicit := next != nil && next.Grant != nil && next.Grant.Call == ev.Call.ID &&
			next.Grant.Approver == chain.ElicitationApprover
		err = r.call(s, ev, now, elicit, fail)
	case ev.Grant != nil:
		err = r.grant(s, ev.Grant, now, fail)
	case ev.Output != nil:
		err = r.output(s, ev.Output, now, fail)
	case ev.Tools != nil:
		s.state.ListTools(ev.Tools)
		err = r.append(now, session, chain.KindTools, &audit.ToolsBody{Tools: ev.Tools})
	case ev.End:
		r.Close()
		err = r.append(now, session, chain.KindEnd, &audit.EndBody{})
	}
	return err
}

// checkClock refuses a trace whose events mix times with none: the ones
// without "at" would be stamped from another clock (the epoch plus their
// line), and the log would hold a session spanning decades.
func (r *Recorder) checkClock(file string, ev *Event, fail func(string, ...any) error) error {
	if file != r.clock {
		if r.clock != "" {
			r.base += r.line
		}
		r.clock, r.timed, r.untimed, r.line = file, 0, 0, 0
	}
	r.line = max(r.line, ev.Line)
	if ev.At.IsZero() {
		if r.timed > 0 {
			return fail("this event has no \"at\" but line %d has one: a trace's events carry \"at\" all or none", r.timed)
		}
		if r.untimed == 0 {
			r.untimed = ev.Line
		}
		return nil
	}
	if r.untimed > 0 {
		return fail("this event has \"at\" but line %d has none: a trace's events carry \"at\" all or none", r.untimed)
	}
	if r.timed == 0 {
		r.timed = ev.Line
	}
	return nil
}

func (r *Recorder) time(ev *Event) time.Time {
	if ev.At.IsZero() && !r.Epoch.IsZero() {
		return r.Epoch.Add(time.Duration(r.base+ev.Line) * time.Second)
	}
	return eventTime(ev)
}

// forward refuses an event stamped before the one written last, in this
// trace or an earlier one.
func (r *Recorder) forward(file string, ev *Event, fail func(string, ...any) error) error {
	t := r.time(ev)
	if err := chain.CheckTime(t); err != nil {
		return fail("%v", err)
	}
	if t.Before(r.last) {
		return fail("this event is at %s, before %s:%d at %s: a log's times only go forward (give the traces in the order they happened)",
			t.UTC().Format(time.RFC3339Nano), r.lastFile, r.lastLine, r.last.UTC().Format(time.RFC3339Nano))
	}
	r.last, r.lastFile, r.lastLine = t, file, ev.Line
	return nil
}

func (r *Recorder) append(ts time.Time, session string, kind chain.Kind, body any) error {
	_, err := r.Log.Append(ts, session, kind, body)
	return err
}

func (r *Recorder) call(s *stepper, ev *Event, now time.Time, elicit bool, fail func(string, ...any) error) error {
	c := ev.Call
	if len(c.Redacted) > 0 {
		return fail("call %q has redacted arguments: recording needs the full arguments (the policy's redact list decides what is written)", c.ID)
	}
	written, removed := engine.Redact(c.Args, r.Policy.Redact())
	digest := engine.ArgsDigest(c.Args)
	if len(removed) > 0 {
		if len(r.Secret) == 0 {
			return fail("call %q holds %s, which the policy redacts: a secret is needed to key its digest", c.ID, removed[0])
		}
		digest = engine.ArgsHMAC(r.Secret, c.Args)
	}
	call := &engine.Call{ID: c.ID, Server: s.state.Server, Tool: c.Tool, Args: c.Args, Digest: digest}
	pc, err := s.call(call)
	if err != nil {
		return fail("%v", err)
	}
	d := s.evaluate(call, now)
	if err := s.err(); err != nil {
		return err // the decision may rest on output that could not be read back
	}
	s.commit(pc, d)
	body := &audit.CallBody{Call: c.ID, Tool: c.Tool, Args: written, Digest: digest, Decision: audit.FromDecision(d),
		Elicit: elicit && d.Verdict == engine.Ask}
	for _, p := range removed {
		body.Redacted = append(body.Redacted, p.String())
	}
	return r.append(now, s.state.Session, chain.KindCall, body)
}

func (r *Recorder) grant(s *stepper, g *GrantEvent, now time.Time, fail func(string, ...any) error) error {
	pc, err := s.lookup(g.Call)
	if err != nil {
		return fail("grant %v", err)
	}
	grant := s.grantFor(pc, g, now)
	if err := chain.CheckTime(grant.Expires); err != nil {
		return fail("grant %q expires at a time a log cannot hold: %v", g.ID, err)
	}
	body := &audit.GrantBody{Grant: grant.ID, Call: g.Call, Tool: grant.Tool, Digest: grant.Digest,
		Approver: grant.Approver, Answer: audit.Answer(grant.Approve), Expires: grant.Expires.UTC().Format(chain.TimeFormat)}
	if grant.Approver != chain.ElicitationApprover {
		skey, ok := r.Approvers[grant.Approver]
		if !ok {
			err := fail("grant %q by %q cannot be signed: recording needs %s's approver key", g.ID, grant.Approver, grant.Approver)
			err.(*SyntaxError).NeedsKey = grant.Approver
			return err
		}
		sig, err := chain.SignApproval(chain.Approval{ID: grant.ID, Kind: chain.ApproveCall, Session: s.state.Session, Server: grant.Server,
			Tool: grant.Tool, Digest: grant.Digest, Answer: body.Answer, Time: now.UTC().Format(chain.TimeFormat)}, skey)
		if err != nil {
			return fail("grant %q: %v", g.ID, err)
		}
		body.Signature = &sig
	}
	if d, settles := s.answer(pc, grant, now); settles {
		s.settle(pc, d)
		rd := audit.FromDecision(d)
		body.Decision = &rd
	} else {
		s.state.AddGrant(grant)
	}
	return r.append(now, s.state.Session, chain.KindGrant, body)
}

func (r *Recorder) output(s *stepper, o *Output, now time.Time, fail func(string, ...any) error) error {
	seq := int(r.Log.Next())
	src, err := s.source(o.Call, o.Server, o.Tool, seq)
	if err != nil {
		return fail("output %v", err)
	}
	digest, err := r.Evidence.Put(o.Evidence, r.Sync)
	if err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	s.output(src, o.Call, o.Error, o.Text, true)
	status := audit.StatusOK
	switch {
	case o.Error && o.Channel != "":
		// Another channel's error is a JSON-RPC error: there is no
		// isError outside a tool result.
		status = audit.StatusFailed
	case o.Error:
		status = audit.StatusError
	}
	body := &audit.ResultBody{Call: o.Call, Server: src.Server, Tool: src.Tool, Channel: o.Channel, Status: status,
		Content: digest, Size: int64(len(o.Evidence))}
	return r.append(now, s.state.Session, chain.KindResult, body)
}
