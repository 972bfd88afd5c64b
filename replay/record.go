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
	Evidence chain.EvidenceStore
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
	cur  *audit.Session  // the session Step is in, nil between sessions
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
		r.cur.Close()
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
			return fail("session %q starts before session %q ended", ev.Start.Session, s.ID())
		}
		st := ev.Start
		if r.seen == nil {
			r.seen = map[string]bool{}
		}
		if r.seen[st.Session] {
			return fail("session %q is already in the log: session ids must be unique", st.Session)
		}
		r.seen[st.Session] = true
		body := &audit.SessionBody{Server: st.Server, Principal: st.Principal, Tools: st.Tools}
		for _, name := range slices.Sorted(maps.Keys(r.Approvers)) {
			pub, err := chain.PublicKey(r.Approvers[name])
			if err != nil {
				return fmt.Errorf("approver %s: %v", name, err)
			}
			body.Approvers = append(body.Approvers, pub)
		}
		cur, err := audit.Start(audit.Config{Policy: r.Policy, Log: r.Log, Spill: true}, r.time(ev), st.Session, body)
		r.cur = cur
		return err
	}
	if s == nil {
		return fail("event before any start")
	}
	now := r.time(ev)
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
		err = s.Tools(now, &audit.ToolsBody{Tools: ev.Tools, Repin: ev.Repin})
	case ev.End:
		r.cur = nil
		err = s.End(now, &audit.EndBody{})
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

func (r *Recorder) call(s *audit.Session, ev *Event, now time.Time, elicit bool, fail func(string, ...any) error) error {
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
	call := &engine.Call{ID: c.ID, Server: s.State().Server, Tool: c.Tool, Args: c.Args, Digest: digest}
	if s.Made(c.ID) {
		return fail("call id %q used twice in session %q", c.ID, s.ID())
	}
	d := s.Decide(call, now)
	if err := s.Err(); err != nil {
		return err // the decision may rest on output that could not be read back
	}
	body := &audit.CallBody{Call: c.ID, Tool: c.Tool, Args: written, Digest: digest, Elicit: elicit && d.Verdict == engine.Ask}
	for _, p := range removed {
		body.Redacted = append(body.Redacted, p.String())
	}
	_, err := s.Call(now, call, d, body)
	return err
}

func (r *Recorder) grant(s *audit.Session, g *GrantEvent, now time.Time, fail func(string, ...any) error) error {
	pc, err := s.Lookup(g.Call)
	if err != nil {
		return fail("grant %v", err)
	}
	grant := GrantFor(s, pc, g, now)
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
		sig, err := chain.SignApproval(chain.Approval{ID: grant.ID, Kind: chain.ApproveCall, Session: s.ID(), Server: grant.Server,
			Tool: grant.Tool, Digest: grant.Digest, Answer: body.Answer, Time: now.UTC().Format(chain.TimeFormat)}, skey)
		if err != nil {
			return fail("grant %q: %v", g.ID, err)
		}
		body.Signature = &sig
	}
	if d, settles := s.Answer(pc, grant, now); settles {
		return s.Settle(now, pc, d, body)
	}
	return s.Grant(now, grant, body)
}

func (r *Recorder) output(s *audit.Session, o *Output, now time.Time, fail func(string, ...any) error) error {
	src, err := s.Source(o.Call, o.Server, o.Tool, 0)
	if err != nil {
		return fail("output %v", err)
	}
	digest, err := r.Evidence.Put(o.Evidence, r.Sync)
	if err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	body := &audit.ResultBody{Call: o.Call, Server: src.Server, Tool: src.Tool, Channel: o.Channel, Status: OutputStatus(o),
		Content: digest, Size: int64(len(o.Evidence))}
	_, err = s.Result(now, 0, body, &audit.Output{Text: o.Text})
	return err
}
