package audit

import (
	"time"

	"bailiff/engine"
	"bailiff/replay"
)

// traceStep is the trace event ev as the driver takes it, at time at. A
// call's digest is its arguments' digest.
func traceStep(ev *replay.Event, at time.Time) Event {
	e := Event{At: at, Pos: ev.Line}
	switch {
	case ev.Start != nil:
		st := ev.Start
		e.Start = &StartStep{ID: st.Session, Body: &SessionBody{Server: st.Server, Principal: st.Principal, Tools: st.Tools}}
	case ev.Call != nil:
		c := ev.Call
		e.Call = &CallStep{Label: c.Label,
			Call: &engine.Call{ID: c.ID, ToolRef: engine.ToolRef{Tool: c.Tool}, Args: c.Args, Redacted: c.Redacted, Digest: engine.ArgsDigest(c.Args)}}
	case ev.Grant != nil:
		g := ev.Grant
		e.Grant = &GrantStep{Call: g.Call, ID: g.ID, Approver: g.Approver, Approve: g.Approve, Expires: g.Expires}
	case ev.Output != nil:
		o := ev.Output
		e.Result = &ResultStep{Out: &Output{Text: o.Text},
			Body: &ResultBody{Call: o.Call, ToolRef: o.ToolRef, Channel: o.Channel, Status: outputStatus(o)}}
	case ev.Tools != nil:
		e.Tools = &ToolsBody{Tools: ev.Tools, Repin: ev.Repin}
	case ev.End:
		e.End = &EndBody{}
	}
	return e
}

// TraceSteps is a trace's events as the driver takes them.
func TraceSteps(events []replay.Event) []Event {
	steps := make([]Event, len(events))
	for i := range events {
		steps[i] = traceStep(&events[i], events[i].Time())
	}
	return steps
}

// SyntaxError is err, a step the driver refused, as the syntax error of
// file at the step's position (a trace's line, a log's record seq); any
// other error is returned as it is.
func SyntaxError(file string, err error) error {
	if se, ok := err.(*StepError); ok {
		return &replay.SyntaxError{File: file, Line: se.Pos, Reason: se.Error()}
	}
	return err
}

// outputStatus is the result status an output stands for: another
// channel's error is a JSON-RPC error (there is no isError outside a
// tool result).
func outputStatus(o *replay.Output) string {
	switch {
	case o.Error && o.Channel != "":
		return StatusFailed
	case o.Error:
		return StatusError
	}
	return StatusOK
}
