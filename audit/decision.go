package audit

import "bailiff/engine"

// FromDecision is a decision as a call or grant record holds it.
func FromDecision(d engine.Decision) Decision {
	rd := Decision{Verdict: string(d.Verdict), Check: string(d.Check), Rule: d.Rule, Reason: d.Reason,
		Destination: d.Destination, Grant: d.Grant}
	if d.TaintedBy != nil {
		rd.TaintedBy = &Source{Seq: d.TaintedBy.Pos, ToolRef: d.TaintedBy.ToolRef}
	}
	return rd
}

// toDecision is a recorded decision as the engine's, to apply it.
func toDecision(rd Decision) engine.Decision {
	d := engine.Decision{Verdict: engine.Verdict(rd.Verdict), Check: engine.Check(rd.Check), Rule: rd.Rule,
		Reason: rd.Reason, Destination: rd.Destination, Grant: rd.Grant}
	if rd.TaintedBy != nil {
		d.TaintedBy = &engine.Source{Pos: rd.TaintedBy.Seq, ToolRef: rd.TaintedBy.ToolRef}
	}
	return d
}

// Answer is a grant's answer as a grant record words it.
func Answer(approve bool) string {
	if approve {
		return "approve"
	}
	return "decline"
}
