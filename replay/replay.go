package replay

import (
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
	r := &runner{file: file}
	d := &audit.Driver{Config: audit.Config{Policy: p, Spill: true}, Observer: r}
	defer d.Close()
	for i := range events {
		ev := events[i].Step(eventTime(&events[i]))
		if err := d.Step(&ev); err != nil {
			return nil, stepError(file, err)
		}
	}
	return r.out, nil
}

// runner observes a replay: one result per call, its final decision.
type runner struct {
	file  string
	out   []Result
	index map[string]int // the session's calls' results, by id
}

func (r *runner) Started(*audit.Session, *audit.Event) error {
	r.index = map[string]int{}
	return nil
}

func (r *runner) Called(s *audit.Session, ev *audit.Event, _, d engine.Decision) error {
	c := ev.Call.Call
	r.index[c.ID] = len(r.out)
	r.out = append(r.out, Result{File: r.file, Session: s.ID(), Line: ev.Pos, ID: c.ID, Tool: c.Tool, Label: ev.Call.Label, Decision: d})
	return nil
}

func (r *runner) Granted(_ *audit.Session, _ *audit.Event, pc *audit.Pending, _ engine.Grant, settles bool, _, d engine.Decision) error {
	if settles {
		r.out[r.index[pc.Call().ID]].Decision = d
	}
	return nil
}

func (r *runner) Resulted(*audit.Session, *audit.Event, engine.Source) error { return nil }
func (r *runner) ToolsListed(*audit.Session, *audit.Event, bool) error       { return nil }
func (r *runner) Ended(*audit.Session, *audit.Event) error                   { return nil }

func eventTime(ev *Event) time.Time {
	if !ev.At.IsZero() {
		return ev.At
	}
	return Epoch.Add(time.Duration(ev.Line) * time.Second)
}
