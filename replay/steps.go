package replay

import (
	"time"

	"bailiff/audit"
	"bailiff/engine"
)

// Step is the trace event ev as audit's driver takes it, at time at. A
// call's digest is its arguments' digest.
func (ev *Event) Step(at time.Time) audit.Event {
	e := audit.Event{At: at, Pos: ev.Line}
	switch {
	case ev.Start != nil:
		st := ev.Start
		e.Start = &audit.StartStep{ID: st.Session, Body: &audit.SessionBody{Server: st.Server, Principal: st.Principal, Tools: st.Tools}}
	case ev.Call != nil:
		c := ev.Call
		e.Call = &audit.CallStep{Label: c.Label,
			Call: &engine.Call{ID: c.ID, Tool: c.Tool, Args: c.Args, Redacted: c.Redacted, Digest: engine.ArgsDigest(c.Args)}}
	case ev.Grant != nil:
		g := ev.Grant
		e.Grant = &audit.GrantStep{Call: g.Call, ID: g.ID, Approver: g.Approver, Approve: g.Approve, Expires: g.Expires}
	case ev.Output != nil:
		o := ev.Output
		e.Result = &audit.ResultStep{Out: &audit.Output{Text: o.Text},
			Body: &audit.ResultBody{Call: o.Call, Server: o.Server, Tool: o.Tool, Channel: o.Channel, Status: outputStatus(o)}}
	case ev.Tools != nil:
		e.Tools = &audit.ToolsBody{Tools: ev.Tools, Repin: ev.Repin}
	case ev.End:
		e.End = &audit.EndBody{}
	}
	return e
}

// Steps is a trace's events as audit's driver takes them.
func Steps(events []Event) []audit.Event {
	steps := make([]audit.Event, len(events))
	for i := range events {
		steps[i] = events[i].Step(eventTime(&events[i]))
	}
	return steps
}

// stepError is a step the driver refused, as a trace's syntax error.
func stepError(file string, err error) error {
	if se, ok := err.(*audit.StepError); ok {
		return &SyntaxError{File: file, Line: se.Pos, Reason: se.Reason}
	}
	return err
}
