package replay

import (
	"fmt"
	"time"

	"bailiff/chain"
	"bailiff/engine"
	"bailiff/internal/records"
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

	seen map[string]bool // sessions recorded, across traces
}

// Record writes the events of one trace file.
func (r *Recorder) Record(file string, events []Event) error {
	var s *stepper
	for i := range events {
		ev := &events[i]
		fail := func(format string, a ...any) error {
			return &SyntaxError{File: file, Line: ev.Line, Reason: fmt.Sprintf(format, a...)}
		}
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
			s = newStepper(r.Policy, st.Session, st.Server, st.Principal, st.Tools)
			body := &chain.SessionBody{Server: st.Server, Principal: chain.Principal(st.Principal),
				PolicyVersion: r.Policy.Version(), Policy: string(r.Policy.Canonical()),
				Tools: records.Tools(st.Tools), Engine: engine.Version}
			if err := r.append(r.time(ev), st.Session, chain.KindSession, body); err != nil {
				return err
			}
			continue
		}
		if s == nil {
			return fail("event before any start")
		}
		now := r.time(ev)
		session := s.state.Session
		var err error
		switch {
		case ev.Call != nil:
			err = r.call(s, ev, now, fail)
		case ev.Grant != nil:
			err = r.grant(s, ev.Grant, now, fail)
		case ev.Output != nil:
			err = r.output(s, ev.Output, now, fail)
		case ev.Tools != nil:
			s.state.ListTools(ev.Tools)
			err = r.append(now, session, chain.KindTools, &chain.ToolsBody{Tools: records.Tools(ev.Tools)})
		case ev.End:
			s = nil
			err = r.append(now, session, chain.KindEnd, &chain.EndBody{})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *Recorder) time(ev *Event) time.Time {
	if ev.At.IsZero() && !r.Epoch.IsZero() {
		return r.Epoch.Add(time.Duration(ev.Line) * time.Second)
	}
	return eventTime(ev)
}

func (r *Recorder) append(ts time.Time, session string, kind chain.Kind, body any) error {
	_, err := r.Log.Append(ts, session, kind, body)
	return err
}

func (r *Recorder) call(s *stepper, ev *Event, now time.Time, fail func(string, ...any) error) error {
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
	s.commit(pc, d)
	body := &chain.CallBody{Call: c.ID, Tool: c.Tool, Args: written, Digest: digest, Decision: records.FromDecision(d)}
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
	body := &chain.GrantBody{Grant: grant.ID, Call: g.Call, Tool: grant.Tool, Digest: grant.Digest,
		Approver: grant.Approver, Answer: records.Answer(grant.Approve), Expires: grant.Expires.UTC().Format(chain.TimeFormat)}
	if d, settles := s.answer(pc, grant, now); settles {
		s.settle(pc, d)
		rd := records.FromDecision(d)
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
	status := chain.StatusOK
	switch {
	case o.Error && o.Channel != "":
		// Another channel's error is a JSON-RPC error: there is no
		// isError outside a tool result.
		status = chain.StatusFailed
	case o.Error:
		status = chain.StatusError
	}
	body := &chain.ResultBody{Call: o.Call, Server: src.Server, Tool: src.Tool, Channel: o.Channel, Status: status,
		Content: digest, Size: int64(len(o.Evidence))}
	return r.append(now, s.state.Session, chain.KindResult, body)
}
