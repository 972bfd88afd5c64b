package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"bailiff/engine"
)

// servers are the servers a tool is offered on, as the logs show them: the
// servers of the sessions that called or listed it, else every server the
// logs' sessions ran against (a tool from a --tools file or a contract
// only). Rules are scoped by server, so a tool's controls depend on it.
func (p *Pack) servers(tool string) []string {
	if s := p.ToolServers[tool]; len(s) > 0 {
		return sortedKeys(s)
	}
	all := map[string]bool{}
	for _, s := range p.ToolServers {
		for k := range s {
			all[k] = true
		}
	}
	return sortedKeys(all)
}

// namedByRule reports whether some rule can match the tool on one of its
// servers; with no server known, only rules for any server count.
func (p *Pack) namedByRule(tool string) bool {
	servers := p.servers(tool)
	if len(servers) == 0 {
		servers = []string{""}
	}
	for _, s := range servers {
		if p.Policy.Explain(engine.ToolRef{Server: s, Tool: tool}).NamesTool() {
			return true
		}
	}
	return false
}

// ruleText says which rules decide calls to the tool, per server when
// its servers' rules differ.
func (p *Pack) ruleText(tool string) string {
	servers := p.servers(tool)
	if len(servers) == 0 {
		return "no session shows its server; on any server: " + explainedRules(p.Policy.Explain(engine.ToolRef{Tool: tool}))
	}
	texts := map[string][]string{}
	for _, s := range servers {
		t := explainedRules(p.Policy.Explain(engine.ToolRef{Server: s, Tool: tool}))
		texts[t] = append(texts[t], s)
	}
	if len(texts) == 1 {
		for t := range texts {
			return t
		}
	}
	var out []string
	for t, ss := range texts {
		out = append(out, "on "+strings.Join(ss, ", ")+": "+t)
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// explainedRules lists every rule that can match: which one decides
// depends on the call, so one alone would hide the others.
func explainedRules(e engine.Explanation) string {
	var rules []string
	for _, r := range e.Rules {
		var notes []string
		if r.Disabled {
			notes = append(notes, "disabled")
		}
		if len(r.Predicates) > 0 {
			notes = append(notes, "conditional")
		}
		if len(r.Scopes) > 0 {
			notes = append(notes, "needs scope "+strings.Join(r.Scopes, ", "))
		}
		rules = append(rules, r.ID+" ("+strings.Join(append([]string{string(r.Verdict)}, notes...), ", ")+")")
	}
	switch {
	case len(rules) == 0:
		return "none: denied by default"
	case e.DefaultApplies:
		rules = append(rules, "otherwise denied by default")
	}
	return strings.Join(rules, "; ")
}

// controls describes the controls on one tool. A policy can give a
// tool's servers different contracts; then each column says which
// server has what.
func (p *Pack) controls(tool string) (rule, budget, path, patterns, sink string) {
	rule = p.ruleText(tool)
	servers := p.servers(tool)
	if len(servers) == 0 {
		servers = []string{""}
	}
	// A server the logs never showed may still have its own contract:
	// the pack describes the policy, not only what was seen of it.
	for _, s := range p.Policy.ContractServers(tool) {
		if !slices.Contains(servers, s) {
			servers = append(servers, s)
		}
	}
	type cols struct{ budget, path, patterns, sink string }
	var order []cols
	on := map[cols][]string{}
	for _, s := range servers {
		var c cols
		c.budget, c.path, c.patterns, c.sink = p.contractText(tool, s, p.Policy.Explain(engine.ToolRef{Server: s, Tool: tool}))
		if _, ok := on[c]; !ok {
			order = append(order, c)
		}
		on[c] = append(on[c], s)
	}
	if len(order) == 1 {
		c := order[0]
		return rule, c.budget, c.path, c.patterns, c.sink
	}
	join := func(get func(cols) string) string {
		var out []string
		for _, c := range order {
			names := slices.Clone(on[c])
			for i, n := range names {
				if n == "" {
					names[i] = "other servers"
				}
			}
			out = append(out, "on "+strings.Join(names, ", ")+": "+get(c))
		}
		return strings.Join(out, "; ")
	}
	return rule, join(func(c cols) string { return c.budget }), join(func(c cols) string { return c.path }),
		join(func(c cols) string { return c.patterns }), join(func(c cols) string { return c.sink })
}

// contractText describes one contract of a tool, or its absence. When the
// sink gate applies is the engine's to say (e.Gate), not the contract's
// fields: a contract that names sink_params but no exfiltrating flag is
// gated only when an argument looks like a destination.
func (p *Pack) contractText(tool, server string, e engine.Explanation) (budget, path, patterns, sink string) {
	c := e.Contract
	budget, path, patterns, sink = "-", "-", "-", "-"
	if d := p.Dests[tool]; len(d) > 0 {
		// No contract says otherwise: destination-shaped arguments gate it.
		sink = "gated by its arguments " + strings.Join(d, ", ")
	}
	// A session's tools record both the server and what each schema
	// fixes, so a tool with fixed values always has its servers known.
	if f := p.Fixed[tool][server]; len(f) > 0 {
		defer func() {
			if sink != "not a sink" {
				sink = strings.TrimPrefix(sink+"; ", "-; ") + "where gated, values its schema fixes pass: " + fixedText(f)
			}
		}()
	}
	if c == nil {
		return
	}
	if c.MaxCalls != nil {
		budget = fmt.Sprint(*c.MaxCalls)
	}
	if len(c.WriteParams) > 0 {
		path = strings.Join(c.WriteParams, ", ") + " under " + orNone(c.AllowedPathPrefixes)
	}
	if len(c.ArgPatterns) > 0 {
		var ps []string
		for _, k := range sortedKeys(c.ArgPatterns) {
			ps = append(ps, k+"="+c.ArgPatterns[k])
		}
		patterns = strings.Join(ps, ", ")
	}
	switch {
	case e.Gate == engine.GateNever:
		sink = "not a sink"
	case e.Gate == engine.GateAlways || len(c.SinkParams) > 0 || len(c.TrustedDestinations) > 0:
		sink = "a sink"
		if e.Gate != engine.GateAlways {
			sink += " " + string(e.Gate)
		}
		sink += ": " + destinationsText(c.SinkParams, p.Dests[tool]) + "; trusted: " + orWord(c.TrustedDestinations, "nothing")
		if c.OnTaint == "ask" {
			sink += "; on taint ask"
		}
		if c.OnSelfPublished != "" {
			sink += "; self-published " + c.OnSelfPublished
		}
	}
	more := func(s string) {
		if sink == "-" {
			sink = s
		} else {
			sink += "; " + s
		}
	}
	if len(c.NotDestinations) > 0 && e.Gate != engine.GateNever {
		more("not destinations: " + strings.Join(c.NotDestinations, ", "))
	}
	if c.Fetches != "" {
		more("output's origin: the site of " + c.Fetches)
	}
	return
}

// destinationsText says which arguments the sink gate checks, as the
// engine flattens them: the sink_params, every argument named like a
// destination at any depth, and every argument when there is neither.
// listed are the top-level destination-shaped arguments a tools file
// gives the tool, named where the sink_params leave them out: a reviewer
// reading "to, cc" alone would take bcc to go unchecked.
func destinationsText(sinkParams, listed []string) string {
	var extra []string
	for _, d := range listed {
		if !slices.Contains(sinkParams, d) && !slices.Contains(extra, d) {
			extra = append(extra, d)
		}
	}
	shaped := "any argument named like one"
	if len(extra) > 0 {
		shaped += " (" + strings.Join(extra, ", ") + ")"
	}
	if len(sinkParams) == 0 {
		return "destinations in " + shaped + ", or in every argument when none is"
	}
	return "destinations in " + strings.Join(sinkParams, ", ") + " and " + shaped
}

// contractNames are the tools a contract names exactly, at the top level
// or for a server. A glob key names no tool; the tools it covers show up
// when listed or called.
func contractNames(spec *engine.File) []string {
	var out []string
	add := func(tools map[string]*engine.Contract) {
		for n := range tools {
			if !strings.ContainsAny(n, "*?") {
				out = append(out, n)
			}
		}
	}
	add(spec.Tools)
	for _, sec := range spec.Servers {
		add(sec)
	}
	return out
}

// fixedText lists schema-fixed values by path, every one of them: the
// server chose them, and could put harmless ones first to hide the
// address it means to send to behind a count.
func fixedText(f map[string][]string) string {
	var out []string
	for _, path := range sortedKeys(f) {
		out = append(out, path+" = "+strings.Join(f[path], " | "))
	}
	return strings.Join(out, ", ")
}
