package audit

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
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
	// Ledger, when set, is shared with other recorders writing other
	// logs, as gateways share a tenant's counts: nil counts this log's
	// sessions together.
	Ledger *Ledger

	seen map[string]bool // sessions recorded, across traces
	d    *Driver         // the sessions Step is in
	// ev is the event being stepped and elicit whether the one after it
	// answers its call through the client.
	ev     *replay.Event
	elicit bool
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
func (r *Recorder) Record(file string, events []replay.Event) error {
	r.Close()
	defer r.Close()
	for i := range events {
		var next *replay.Event
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
	if r.d != nil {
		r.d.Close()
	}
}

// Step writes one event of a trace file, so that a generator can record
// a session larger than memory without holding its events (Record holds
// a whole file's). next is the event after it, if any: a grant by
// "elicitation" right after its call is the client answering in band.
func (r *Recorder) Step(file string, ev, next *replay.Event) error {
	fail := func(format string, a ...any) error {
		return &replay.SyntaxError{File: file, Line: ev.Line, Reason: fmt.Sprintf(format, a...)}
	}
	if err := r.checkClock(file, ev, fail); err != nil {
		return err
	}
	if err := r.forward(file, ev, fail); err != nil {
		return err
	}
	if r.d == nil {
		r.d = &Driver{Config: Config{Policy: r.Policy, Log: r.Log, Spill: true, Ledger: r.Ledger}, Observer: r}
	}
	r.ev, r.elicit = ev, ev.Call != nil && next != nil && next.Grant != nil && next.Grant.Call == ev.Call.ID &&
		next.Grant.Approver == ElicitationApprover
	step := traceStep(ev, r.time(ev))
	return SyntaxError(file, r.d.Step(&step))
}

// Prepare fills in what the log is written for the step: the recorder
// is the driver's Preparer.
func (r *Recorder) Prepare(s *Session, step *Event, g *engine.Grant) error {
	ev := r.ev
	fail := func(format string, a ...any) error {
		return &replay.SyntaxError{File: r.clock, Line: ev.Line, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case step.Start != nil:
		return r.start(step.Start, fail)
	case step.Call != nil:
		return r.call(step.Call, fail)
	case step.Grant != nil:
		return r.grant(s, step.Grant, *g, step.At, fail)
	case step.Result != nil:
		return r.output(s, step.Result, fail)
	}
	return nil
}

func (r *Recorder) start(st *StartStep, fail func(string, ...any) error) error {
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	if r.seen[st.ID] {
		return fail("session %q is already in the log: session ids must be unique", st.ID)
	}
	r.seen[st.ID] = true
	for _, name := range slices.Sorted(maps.Keys(r.Approvers)) {
		pub, err := chain.PublicKey(r.Approvers[name])
		if err != nil {
			return fmt.Errorf("approver %s: %v", name, err)
		}
		st.Body.Approvers = append(st.Body.Approvers, pub)
	}
	return nil
}

// The recorder only prepares: what is written is the session's.
func (r *Recorder) Started(*Session, *Event) error { return nil }
func (r *Recorder) Called(*Session, *Event, engine.Decision, engine.Decision) error {
	return nil
}
func (r *Recorder) Granted(*Session, *Event, *Pending, engine.Grant, bool, engine.Decision, engine.Decision) error {
	return nil
}
func (r *Recorder) Resulted(*Session, *Event, engine.Source) error { return nil }
func (r *Recorder) ToolsListed(*Session, *Event, bool) error       { return nil }
func (r *Recorder) Ended(*Session, *Event) error                   { return nil }

// checkClock refuses a trace whose events mix times with none: the ones
// without "at" would be stamped from another clock (the epoch plus their
// line), and the log would hold a session spanning decades.
func (r *Recorder) checkClock(file string, ev *replay.Event, fail func(string, ...any) error) error {
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

func (r *Recorder) time(ev *replay.Event) time.Time {
	if ev.At.IsZero() && !r.Epoch.IsZero() {
		return r.Epoch.Add(time.Duration(r.base+ev.Line) * time.Second)
	}
	return ev.Time()
}

// forward refuses an event stamped before the one written last, in this
// trace or an earlier one.
func (r *Recorder) forward(file string, ev *replay.Event, fail func(string, ...any) error) error {
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

func (r *Recorder) call(cs *CallStep, fail func(string, ...any) error) error {
	c := cs.Call
	if len(c.Redacted) > 0 {
		return fail("call %q has redacted arguments: recording needs the full arguments (the policy's redact list decides what is written)", c.ID)
	}
	written, removed := engine.Redact(c.Args, r.Policy.Redact())
	if len(removed) > 0 {
		if len(r.Secret) == 0 {
			return fail("call %q holds %s, which the policy redacts: a secret is needed to key its digest", c.ID, removed[0])
		}
		c.Digest = engine.ArgsHMAC(r.Secret, c.Args)
	}
	cs.Body = &CallBody{Call: c.ID, Tool: c.Tool, Args: written, Digest: c.Digest, Elicit: r.elicit}
	for _, p := range removed {
		cs.Body.Redacted = append(cs.Body.Redacted, p.String())
	}
	return nil
}

func (r *Recorder) grant(s *Session, gs *GrantStep, grant engine.Grant, now time.Time, fail func(string, ...any) error) error {
	if err := chain.CheckTime(grant.Expires); err != nil {
		return fail("grant %q expires at a time a log cannot hold: %v", gs.ID, err)
	}
	body := &GrantBody{Grant: grant.ID, Call: gs.Call, Tool: grant.Tool, Digest: grant.Digest,
		Approver: grant.Approver, Answer: Answer(grant.Approve), Expires: grant.Expires.UTC().Format(chain.TimeFormat)}
	if grant.Approver != ElicitationApprover {
		skey, ok := r.Approvers[grant.Approver]
		if !ok {
			err := fail("grant %q by %q cannot be signed: recording needs %s's approver key", gs.ID, grant.Approver, grant.Approver)
			err.(*replay.SyntaxError).NeedsKey = grant.Approver
			return err
		}
		sig, err := SignApproval(Approval{ID: grant.ID, Kind: ApproveCall, Session: s.ID(), ToolRef: grant.ToolRef,
			Digest: grant.Digest, Answer: body.Answer, Time: now.UTC().Format(chain.TimeFormat)}, skey)
		if err != nil {
			return fail("grant %q: %v", gs.ID, err)
		}
		body.Signature = &sig
	}
	gs.Body = body
	return nil
}

func (r *Recorder) output(s *Session, rs *ResultStep, fail func(string, ...any) error) error {
	o := r.ev.Output
	src, err := s.Source(o.Call, o.ToolRef, 0)
	if err != nil {
		return fail("output %v", err)
	}
	digest, err := r.Evidence.Put(o.Evidence, r.Sync)
	if err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	rs.Body.Server, rs.Body.Tool, rs.Body.Content, rs.Body.Size = src.Server, src.Tool, digest, int64(len(o.Evidence))
	rs.Out = &Output{Text: o.Text}
	return nil
}
