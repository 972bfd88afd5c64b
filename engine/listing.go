package engine

import (
	"slices"
	"strings"
)

// Hidden tells whether a tool is denied outright for a principal, whatever
// its arguments: no rule could allow or ask for it (the first rule that
// matches it unconditionally denies, or none matches), or its budget is
// zero. A gateway hides such tools from tools/list. Hiding is a courtesy
// to the agent, never a substitute for deciding each call.
func (p *Policy) Hidden(ref ToolRef, principal Principal) bool {
	for i := range p.rules {
		r := &p.rules[i]
		if !r.matches(ref) || (p.disabledRules != nil && p.disabledRules[r.id]) {
			continue
		}
		if p.on(CheckScopes) && !hasAll(principal.Scopes, r.scopes) {
			continue
		}
		if r.action != Deny {
			ct := p.contractFor(ref)
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
			s.pin(t)
		}
	}
	s.ListTools(tools)
}

// Changed tells whether a pinned tool is listed now with another
// definition, and with which: the digest a human would accept.
func (s *State) Changed(name string) (current string, changed bool) {
	pin, ok := s.pins[name]
	if !ok || s.current == nil {
		return "", false
	}
	cur, ok := s.current[name]
	if !ok || pin == "" || cur == pin {
		return "", false
	}
	return cur, true
}

// Accept re-pins tools to the definitions given: a human has approved
// the change, and calls to them are decided again.
func (s *State) Accept(tools []ToolDef) {
	for _, t := range tools {
		s.pin(t)
	}
}

// MayAccept tells whether approver may accept changed tool definitions in
// this session: someone named, and not the principal, since an agent that
// could approve its own tool's new definition would need no approval.
// The gateway, verify and shadow all ask this one rule.
func (s *State) MayAccept(approver string) bool {
	return approver != "" && approver != s.Principal.Subject
}

// PathPrefixes are the allowed_path_prefixes of every tool contract, as
// cleaned when loaded, sorted and without repeats: the places the policy
// lets a tool write, where the gateway's own state must never be.
func (p *Policy) PathPrefixes() []string {
	var out []string
	add := func(c *contract) { out = append(out, c.prefixes...) }
	p.contracts.each(add)
	for _, cs := range p.servers {
		cs.each(add)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Pinned returns the digest a tool is pinned to, so a gateway can check a
// tools/list answer against the pins before the agent sees it.
func (s *State) Pinned(name string) (digest string, ok bool) {
	digest, ok = s.pins[name]
	return digest, ok
}

// matches tells whether the rule selects the tool: Decide, Explain and
// Hidden all select with it.
func (r *rule) matches(ref ToolRef) bool {
	return r.serverG.match(ref.Server) && r.toolG.match(ref.Tool)
}

// Serves tells whether some rule could allow or ask for a call to the
// server, for some principal. A policy that does not serve a server
// denies its every call: almost always a server named otherwise than the
// policy names it, which a gateway should say before it starts, not after
// every call was denied. Rules are read in order, as Decide reads them:
// an unconditional deny of every tool for every principal ends the
// search, and a rule whose conditions contradict serves nothing.
func (p *Policy) Serves(server string) bool {
	for i := range p.rules {
		r := &p.rules[i]
		if r.never || !r.serverG.match(server) {
			continue
		}
		if r.action != Deny {
			return true
		}
		if len(r.preds) == 0 && len(r.scopes) == 0 && strings.Trim(r.tool, "*") == "" {
			return false
		}
	}
	return false
}

// ServerGlobs are the server globs of the rules that allow or ask, sorted
// and without repeats: the names a policy serves, for a message that
// says which name was meant.
func (p *Policy) ServerGlobs() []string {
	var out []string
	for i := range p.rules {
		if r := &p.rules[i]; r.action != Deny {
			out = append(out, r.server)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
