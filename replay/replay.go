package replay

import (
	"fmt"
	"time"

	"bailiff/engine"
)

// Result is the final decision on one call of a trace.
type Result struct {
	File     string
	Session  string
	Line     int
	ID       string
	Tool     string
	Label    string
	Decision engine.Decision
}

// Verdict is the verdict as reported: "unevaluable" when the decision
// depended on redacted input.
func (r Result) Verdict() string {
	if r.Decision.Unevaluable {
		return "unevaluable"
	}
	return string(r.Decision.Verdict)
}

// Run replays the events of one trace file under the policy and returns
// one result per call, in trace order. An asked call stays asked unless a
// grant for it follows before the next call or the end of its session.
func Run(p *engine.Policy, file string, events []Event) ([]Result, error) {
	var out []Result
	var s *session
	for i := range events {
		ev := &events[i]
		fail := func(format string, a ...any) error {
			return &SyntaxError{File: file, Line: ev.Line, Reason: fmt.Sprintf(format, a...)}
		}
		if ev.Start != nil {
			if s != nil {
				return nil, fail("session %q starts before session %q ended", ev.Start.Session, s.state.Session)
			}
			st := ev.Start
			s = &session{state: engine.NewState(st.Session, st.Server, st.Principal, st.Tools), calls: map[string]*pending{}}
			continue
		}
		if s == nil {
			return nil, fail("event before any start")
		}
		now := eventTime(ev)
		switch {
		case ev.Call != nil:
			s.settle()
			c := ev.Call
			if _, dup := s.calls[c.ID]; dup {
				return nil, fail("call id %q used twice in session %q", c.ID, s.state.Session)
			}
			call := &engine.Call{ID: c.ID, Server: s.state.Server, Tool: c.Tool, Args: c.Args,
				Redacted: c.Redacted, Digest: engine.ArgsDigest(c.Args)}
			d := engine.Decide(p, s.state, call, now)
			out = append(out, Result{File: file, Session: s.state.Session, Line: ev.Line, ID: c.ID, Tool: c.Tool, Label: c.Label, Decision: d})
			pc := &pending{call: call, result: len(out) - 1}
			s.calls[c.ID] = pc
			if d.Verdict == engine.Ask && !d.Unevaluable {
				s.open = pc
			} else if !d.Unevaluable {
				s.state.Apply(p, call, d)
			}
		case ev.Grant != nil:
			g := ev.Grant
			pc, ok := s.calls[g.Call]
			if !ok {
				return nil, fail("grant answers call %q, which session %q has not made", g.Call, s.state.Session)
			}
			exp := g.Expires
			if exp.IsZero() {
				exp = now.Add(p.ApprovalTTL())
			}
			grant := engine.Grant{ID: g.ID, Server: s.state.Server, Tool: pc.call.Tool, Digest: pc.call.Digest,
				Approver: g.Approver, Approve: g.Approve, Expires: exp}
			if s.open == pc {
				d := engine.Answer(p, s.state, pc.call, out[pc.result].Decision, grant, now)
				out[pc.result].Decision = d
				s.state.Apply(p, pc.call, d)
				s.open = nil
			} else {
				s.state.AddGrant(grant)
			}
		case ev.Output != nil:
			o := ev.Output
			tool := o.Tool
			if o.Call != "" {
				pc, ok := s.calls[o.Call]
				if !ok {
					return nil, fail("output answers call %q, which session %q has not made", o.Call, s.state.Session)
				}
				if tool == "" {
					tool = pc.call.Tool
				}
				if o.Error {
					s.state.Failed(o.Call)
				}
			}
			server := o.Server
			if server == "" {
				server = s.state.Server
			}
			s.state.AddOutput(p, engine.Source{Pos: ev.Line, Server: server, Tool: tool}, o.Text)
		case ev.Tools != nil:
			s.state.ListTools(ev.Tools)
		case ev.End:
			s.settle()
			s = nil
		}
	}
	return out, nil
}

type session struct {
	state *engine.State
	calls map[string]*pending
	open  *pending // an asked call still waiting for its answer
}

type pending struct {
	call   *engine.Call
	result int
}

// settle closes the wait for an answer: an unanswered ask stays an ask
// (no answer is a deny, and nothing was forwarded).
func (s *session) settle() { s.open = nil }

func eventTime(ev *Event) time.Time {
	if !ev.At.IsZero() {
		return ev.At
	}
	return Epoch.Add(time.Duration(ev.Line) * time.Second)
}
