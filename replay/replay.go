package replay

import (
	"fmt"
	"time"

	"bailiff/audit"
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
	var s *audit.Session
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	index := map[*audit.Pending]int{}
	for i := range events {
		ev := &events[i]
		fail := func(format string, a ...any) error {
			return &SyntaxError{File: file, Line: ev.Line, Reason: fmt.Sprintf(format, a...)}
		}
		now := eventTime(ev)
		if ev.Start != nil {
			if s != nil {
				return nil, fail("session %q starts before session %q ended", ev.Start.Session, s.ID())
			}
			st := ev.Start
			s, _ = audit.Start(audit.Config{Policy: p, Spill: true}, now, st.Session,
				&audit.SessionBody{Server: st.Server, Principal: st.Principal, Tools: st.Tools})
			continue
		}
		if s == nil {
			return nil, fail("event before any start")
		}
		var err error
		switch {
		case ev.Call != nil:
			c := ev.Call
			call := &engine.Call{ID: c.ID, Server: s.State().Server, Tool: c.Tool, Args: c.Args,
				Redacted: c.Redacted, Digest: engine.ArgsDigest(c.Args)}
			if s.Made(c.ID) {
				return nil, fail("call id %q used twice in session %q", c.ID, s.ID())
			}
			d := s.Decide(call, now)
			if err := s.Err(); err != nil {
				return nil, err
			}
			pc, _ := s.Call(now, call, d, nil)
			out = append(out, Result{File: file, Session: s.ID(), Line: ev.Line, ID: c.ID, Tool: c.Tool, Label: c.Label, Decision: d})
			index[pc] = len(out) - 1
		case ev.Grant != nil:
			pc, lerr := s.Lookup(ev.Grant.Call)
			if lerr != nil {
				return nil, fail("grant %v", lerr)
			}
			grant := GrantFor(s, pc, ev.Grant, now)
			if d, settles := s.Answer(pc, grant, now); settles {
				err = s.Settle(now, pc, d, nil)
				out[index[pc]].Decision = d
			} else {
				err = s.Grant(now, grant, nil)
			}
		case ev.Output != nil:
			o := ev.Output
			body := &audit.ResultBody{Call: o.Call, Server: o.Server, Tool: o.Tool, Channel: o.Channel, Status: OutputStatus(o)}
			if _, rerr := s.Result(now, ev.Line, body, Brought(o)); rerr != nil {
				return nil, fail("output %v", rerr)
			}
		case ev.Tools != nil:
			err = s.Tools(now, &audit.ToolsBody{Tools: ev.Tools, Repin: ev.Repin})
		case ev.End:
			err = s.End(now, nil)
			s = nil
		}
		if err != nil {
			return nil, err
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
