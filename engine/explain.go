package engine

// Explanation is what a policy says about calls to one tool on one
// server, before any call is seen: the rules that can decide it, in the
// order Decide tries them, and the contract the tool carries.
type Explanation struct {
	ToolRef
	// Rules can match a call to the tool, in policy order. A rule whose
	// Conditional is set decides only the calls its predicates or scopes
	// admit; the next rule (or the default) decides the rest.
	Rules []ExplainedRule
	// DefaultApplies is set when some call can reach the default deny:
	// no rule matches, or every matching rule is conditional.
	DefaultApplies bool
	// Contract is the tool's contract as written, nil when it has none.
	Contract *Contract
	// Gate is when the sink gate applies to the tool's calls, as Decide
	// applies it: what a reader must say of the contract, whatever it
	// names.
	Gate Gate
}

// Gate is when the sink gate applies to a tool's calls.
type Gate string

// The gates. With no exfiltrating flag, the gate applies to a call with
// an argument whose name looks like a destination, whatever sink_params
// and trusted_destinations say.
const (
	GateAlways Gate = "always"
	GateNever  Gate = "never"
	GateShaped Gate = "when an argument looks like a destination"
)

// ExplainedRule is one rule that can match the tool.
type ExplainedRule struct {
	ID      string
	Verdict Verdict
	// Predicates and Scopes are what the match is conditional on.
	Predicates []string
	Scopes     []string
	// Disabled is set when the rule is switched off (--without-rule):
	// Decide skips it, so it decides nothing.
	Disabled bool
}

// Conditional reports whether the rule may not apply to every call.
func (r ExplainedRule) Conditional() bool { return len(r.Predicates) > 0 || len(r.Scopes) > 0 }

// Explain uses the same server and tool globs Decide matches with, so a
// rule for server fs* never names a tool on server mail. Scopes count as
// conditions only while the scopes check is on, as in Decide.
func (p *Policy) Explain(ref ToolRef) Explanation {
	e := Explanation{ToolRef: ref, DefaultApplies: true}
	for i := range p.rules {
		r := &p.rules[i]
		if !r.matches(ref) {
			continue
		}
		x := ExplainedRule{ID: r.id, Verdict: r.action, Disabled: p.disabledRules != nil && p.disabledRules[r.id]}
		for _, pr := range r.preds {
			x.Predicates = append(x.Predicates, pr.path.raw)
		}
		if p.on(CheckScopes) {
			x.Scopes = append(x.Scopes, r.scopes...)
		}
		if !x.Disabled && !x.Conditional() && e.DefaultApplies {
			e.DefaultApplies = false
		}
		e.Rules = append(e.Rules, x)
	}
	ct := p.contractFor(ref)
	if ct.hasContract && ct.spec != nil {
		c := *ct.spec
		e.Contract = &c
	}
	switch ct.exfil {
	case exfilYes:
		e.Gate = GateAlways
	case exfilNo:
		e.Gate = GateNever
	default:
		e.Gate = GateShaped
	}
	return e
}

// NamesTool reports whether some enabled rule can match the tool.
func (e Explanation) NamesTool() bool {
	for _, r := range e.Rules {
		if !r.Disabled {
			return true
		}
	}
	return false
}
