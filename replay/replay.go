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
	var s *stepper
	defer func() {
		if s != nil {
			s.close()
		}
	}()
	index := map[*pending]int{}
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
			s = newStepper(p, st.Session, st.Server, st.Principal, st.Tools)
			continue
		}
		if s == nil {
			return nil, fail("event before any start")
		}
		now := eventTime(ev)
		switch {
		case ev.Call != nil:
			c := ev.Call
			call := &engine.Call{ID: c.ID, Server: s.state.Server, Tool: c.Tool, Args: c.Args,
				Redacted: c.Redacted, Digest: engine.ArgsDigest(c.Args)}
			pc, err := s.call(call)
			if err != nil {
				return nil, fail("%v", err)
			}
			d := s.evaluate(call, now)
			if err := s.err(); err != nil {
				return nil, err
			}
			s.commit(pc, d)
			out = append(out, Result{File: file, Session: s.state.Session, Line: ev.Line, ID: c.ID, Tool: c.Tool, Label: c.Label, Decision: d})
			index[pc] = len(out) - 1
		case ev.Grant != nil:
			g := ev.Grant
			pc, err := s.lookup(g.Call)
			if err != nil {
				return nil, fail("grant %v", err)
			}
			grant := s.grantFor(pc, g, now)
			if d, settles := s.answer(pc, grant, now); settles {
				s.settle(pc, d)
				out[index[pc]].Decision = d
			} else {
				s.state.AddGrant(grant)
			}
		case ev.Output != nil:
			o := ev.Output
			src, err := s.source(o.Call, o.Server, o.Tool, ev.Line)
			if err != nil {
				return nil, fail("output %v", err)
			}
			s.output(src, o.Call, o.Error, o.Text, true)
		case ev.Tools != nil:
			s.state.ListTools(ev.Tools)
		case ev.End:
			s.open = nil
			s.close()
			s = nil
		}
	}
	return out, nil
}

func eventTime(ev *Event) time.Time {
	if !ev.At.IsZero() {
		return ev.At
	}
	return Epoch.Add(time.Duration(ev.Line) * time.Second)
}
