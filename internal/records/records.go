// Package records converts between the engine's decisions and the audit
// log's record of them, for the two writers of audit logs (replay's
// recorder and the live proxy) and the verifier.
package records

import (
	"bailiff/chain"
	"bailiff/engine"
)

// FromDecision is a decision as a call or grant record holds it.
func FromDecision(d engine.Decision) chain.Decision {
	rd := chain.Decision{Verdict: string(d.Verdict), Check: string(d.Check), Rule: d.Rule, Reason: d.Reason,
		Destination: d.Destination, Grant: d.Grant}
	if d.TaintedBy != nil {
		rd.TaintedBy = &chain.Source{Seq: d.TaintedBy.Pos, Server: d.TaintedBy.Server, Tool: d.TaintedBy.Tool}
	}
	return rd
}

// ToDecision is a recorded decision as the engine's, to apply it.
func ToDecision(rd chain.Decision) engine.Decision {
	d := engine.Decision{Verdict: engine.Verdict(rd.Verdict), Check: engine.Check(rd.Check), Rule: rd.Rule,
		Reason: rd.Reason, Destination: rd.Destination, Grant: rd.Grant}
	if rd.TaintedBy != nil {
		d.TaintedBy = &engine.Source{Pos: rd.TaintedBy.Seq, Server: rd.TaintedBy.Server, Tool: rd.TaintedBy.Tool}
	}
	return d
}

// Tools are pinned tools as a session or tools record holds them.
func Tools(defs []engine.ToolDef) []chain.Tool {
	out := make([]chain.Tool, 0, len(defs))
	for _, d := range defs {
		out = append(out, chain.Tool(d))
	}
	return out
}

// ToolDefs are recorded tools as the engine pins them.
func ToolDefs(ts []chain.Tool) []engine.ToolDef {
	out := make([]engine.ToolDef, 0, len(ts))
	for _, t := range ts {
		out = append(out, engine.ToolDef(t))
	}
	return out
}

// Answer is a grant's answer as a grant record words it.
func Answer(approve bool) string {
	if approve {
		return "approve"
	}
	return "decline"
}
