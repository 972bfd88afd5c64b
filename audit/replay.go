package audit

import (
	"bailiff/engine"
	"bailiff/replay"
)

// Outcome is the final decision on one call of a trace.
type Outcome struct {
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
func (r Outcome) Verdict() string {
	if r.Decision.Unevaluable {
		return "unevaluable"
	}
	return string(r.Decision.Verdict)
}

// Replay drives the events of one trace file under the policy and returns
// one outcome per call, in trace order. An asked call stays asked unless a
// grant for it follows before the next call or the end of its session.
func Replay(p *engine.Policy, file string, events []replay.Event) ([]Outcome, error) {
	r := &runner{file: file}
	d := &Driver{Config: Config{Policy: p, Spill: true}, Observer: r}
	defer d.Close()
	for i := range events {
		ev := traceStep(&events[i], events[i].Time())
		if err := d.Step(&ev); err != nil {
			return nil, SyntaxError(file, err)
		}
	}
	return r.out, nil
}

// runner observes a replay: one outcome per call, its final decision.
type runner struct {
	file  string
	out   []Outcome
	index map[string]int // the session's calls' results, by id
}

func (r *runner) Started(*Session, *Event) error {
	r.index = map[string]int{}
	return nil
}

func (r *runner) Called(s *Session, ev *Event, _, d engine.Decision) error {
	c := ev.Call.Call
	r.index[c.ID] = len(r.out)
	r.out = append(r.out, Outcome{File: r.file, Session: s.ID(), Line: ev.Pos, ID: c.ID, Tool: c.Tool, Label: ev.Call.Label, Decision: d})
	return nil
}

func (r *runner) Granted(_ *Session, _ *Event, pc *Pending, _ engine.Grant, settles bool, _, d engine.Decision) error {
	if settles {
		r.out[r.index[pc.Call().ID]].Decision = d
	}
	return nil
}

func (r *runner) Resulted(*Session, *Event, engine.Source) error { return nil }
func (r *runner) ToolsListed(*Session, *Event, bool) error       { return nil }
func (r *runner) Ended(*Session, *Event) error                   { return nil }
