package engine

// Hidden tells whether a tool is denied outright for a principal, whatever
// its arguments: no rule could allow or ask for it (the first rule that
// matches it unconditionally denies, or none matches), or its budget is
// zero. A gateway hides such tools from tools/list. Hiding is a courtesy
// to the agent, never a substitute for deciding each call.
func (p *Policy) Hidden(server, tool string, principal Principal) bool {
	for i := range p.rules {
		r := &p.rules[i]
		if !r.serverG.match(server) || !r.toolG.match(tool) || (p.disabledRules != nil && p.disabledRules[r.id]) {
			continue
		}
		if p.on(CheckScopes) && !hasAll(principal.Scopes, r.scopes) {
			continue
		}
		if r.action != Deny {
			ct := p.contractFor(tool)
			return p.on(CheckBudget) && ct.maxCalls == 0
		}
		if len(r.preds) == 0 {
			return true
		}
	}
	return true
}

// Repin records a tools/list answer after list_changed as a gateway
// re-pins it: a tool new to the session is pinned as listed; a tool whose
// definition changed keeps its old pin, so calling it stays denied; a tool
// no longer listed is denied.
func (s *State) Repin(tools []ToolDef) {
	for _, t := range tools {
		if _, ok := s.pins[t.Name]; !ok {
			s.pins[t.Name] = t.Digest
		}
	}
	s.ListTools(tools)
}
