package engine

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Finding is one problem lint found in a policy.
type Finding struct {
	File string `json:"file"`
	Line int    `json:"line"`
	// Kind is the finding's stable id (shadowed-rule, no-sink-params, …;
	// the lint* constants list them all), which outputs and tests key on.
	Kind    string `json:"kind"`
	Subject string `json:"subject"` // the rule id or tool name
	Message string `json:"message"`
}

// Severity is how much a finding matters to a reviewer.
type Severity string

// The severities. A high finding is a call the policy means to gate that
// is not gated as it reads (a sink whose destinations go unchecked), or
// one it means to allow that is always denied.
const (
	SeverityHigh   Severity = "high"
	SeverityMedium Severity = "medium"
)

// Severity is the finding's severity, by its kind: every reader of lint
// (the review pack, SARIF) weighs a finding the same.
func (f Finding) Severity() Severity {
	switch f.Kind {
	case lintNoSinkParams, lintWriteNoPrefixes, lintUnserved:
		return SeverityHigh
	}
	return SeverityMedium
}

// The kinds of lint finding.
const (
	lintShadowed        = "shadowed-rule"
	lintNeverMatches    = "never-matches"
	lintUnlisted        = "unlisted-contract"
	lintNoSinkParams    = "no-sink-params"
	lintWriteNoPrefixes = "write-without-prefixes"
	lintOriginUnset     = "self-published-unset"
	lintOriginUnknown   = "self-published-no-fetch"
	lintOverlap         = "contract-overlap"
	lintLooseGlob       = "glob-loosens"
	lintCostUncounted   = "cost-without-tenants"
	lintRateOnDeny      = "rate-on-deny"
)

// Lint checks a policy for rules that can never decide and contracts that
// cannot do their job, in the file it was loaded from: its findings name
// that file and its lines. listed, when not nil, are the tools the
// servers list (from their tools/list answers), with their schemas'
// argument paths: rules and contracts naming no listed tool are findings
// too, and findings can name real arguments (what a not_destinations
// glob takes out of each listed tool).
func (p *Policy) Lint(listed []ListedTool) ([]Finding, error) {
	if p.source == nil {
		// Not loaded from a file (a policy built in code): its canonical
		// form is the only text it has, and loads as it.
		return lintListed("canonical policy "+p.version, p.canonical, listed)
	}
	return lintListed(p.name, p.source, listed)
}

// lintListed is Lint over a file's bytes. What lint passes must load
// everywhere else too, so it loads the policy again rather than trust one
// loaded another way.
func lintListed(name string, data []byte, listed []ListedTool) ([]Finding, error) {
	l := listing{listed}
	tools := l.names()
	// What lint passes must load everywhere else too: Load also refuses a
	// policy whose canonical form would load as another.
	if _, err := Load(name, data); err != nil {
		return nil, err
	}
	f, root, err := decodeFile(name, data)
	if err != nil {
		return nil, err
	}
	pol, err := compile(f, name, root)
	if err != nil {
		return nil, err
	}
	var out []Finding
	add := func(line int, kind, subject, format string, a ...any) {
		out = append(out, Finding{File: name, Line: line, Kind: kind, Subject: subject, Message: fmt.Sprintf(format, a...)})
	}
	for j, b := range f.Rules {
		line := lineOf(root, "rules", j)
		for i := 0; i < j; i++ {
			if covers(f.Rules[i], b) {
				add(line, lintShadowed, b.ID, "rule %s can never match: rule %s (earlier) matches every call it does", b.ID, f.Rules[i].ID)
				break
			}
		}
		if why := contradiction(b.When); why != "" {
			add(line, lintNeverMatches, b.ID, "rule %s can never match: %s", b.ID, why)
		} else if why := l.unmatched(b); why != "" {
			add(line, lintNeverMatches, b.ID, "rule %s can never match: %s", b.ID, why)
		}
	}
	written := map[string]bool{}
	for k, c := range f.Tools {
		// A policy's canonical form (the one a log embeds) has its packs
		// expanded: a contract exactly as a built-in pack writes it is the
		// pack's, as it is when the file names the pack, so linting a log's
		// policy finds what linting its file finds.
		written[k] = len(f.Packs) > 0 || !packContract(k, c)
	}
	spec := pol.Spec()
	var fetchers []string
	for _, tool := range sortedKeys(spec.Tools) {
		if spec.Tools[tool].Fetches != "" {
			fetchers = append(fetchers, tool)
		}
	}
	for _, sec := range sections(spec, pol) {
		for _, tool := range sortedKeys(sec.tools) {
			c := sec.tools[tool]
			line := lineOf(root, append(sec.keys, tool)...)
			mine := sec.server != "" || written[tool]
			if !mine {
				line = lineOf(root, "packs")
			}
			if why := l.unoffered(sec.server, tool); mine && why != "" {
				add(line, lintUnlisted, tool, "contract for %s, %s", tool, why)
			}
			if mine && c.Exfiltrating != nil && *c.Exfiltrating && len(c.SinkParams) == 0 {
				add(line, lintNoSinkParams, tool, "%s is exfiltrating but names no sink_params: only arguments whose names look like destinations are gated (every argument when none does), so a destination under another name is never checked", tool)
			}
			if len(c.WriteParams) > 0 && len(c.AllowedPathPrefixes) == 0 && (!l.known() || l.offers(orStar(sec.server), tool)) && allowedBySomeRule(f.Rules, tool) {
				add(line, lintWriteNoPrefixes, tool, "%s has write_params but no allowed_path_prefixes: every write is denied", tool)
			}
			lintOrigin(add, line, tool, c, fetchers)
		}
	}
	lintLimits(add, root, f, spec)
	lintServers(add, root, pol, l)
	lintOverlaps(add, root, spec, pol, tools)
	lintTiers(add, root, spec, pol)
	lintNotGlobs(add, root, spec, pol, listed)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out, nil
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

func allowedBySomeRule(rules []RuleSpec, tool string) bool {
	for _, r := range rules {
		if _, ok := globWitness(r.Tool, tool); r.Action != "deny" && ok {
			return true
		}
	}
	return false
}

// covers tells whether rule a matches every call rule b matches.
func covers(a, b RuleSpec) bool {
	as, bs := a.Server, b.Server
	if as == "" {
		as = "*"
	}
	if bs == "" {
		bs = "*"
	}
	if !globCovers(as, bs) || !globCovers(a.Tool, b.Tool) {
		return false
	}
	for _, s := range a.Scopes {
		if !contains(b.Scopes, s) {
			return false
		}
	}
	// a's predicates must each appear in b; lists are judged by the
	// action, so only same-direction rules can shadow through predicates.
	if len(a.When) > 0 && (a.Action == "allow") != (b.Action == "allow") {
		return false
	}
	for _, pa := range a.When {
		found := false
		for _, pb := range b.When {
			found = found || reflect.DeepEqual(pa, pb)
		}
		if !found {
			return false
		}
	}
	return true
}

// globCovers tells whether every name b matches is matched by a, for the
// patterns lint can reason about: equal patterns, a literal b, and a
// trailing-star prefix.
func globCovers(a, b string) bool {
	if a == b || a == "**" {
		return true
	}
	if !strings.ContainsAny(b, "*?") {
		return matchName(a, b)
	}
	if a == "*" {
		return true
	}
	if strings.HasSuffix(a, "*") && !strings.ContainsAny(a[:len(a)-1], "*?") {
		return strings.HasPrefix(b, a[:len(a)-1])
	}
	return false
}

// contradiction explains why a conjunction of predicates can never hold.
func contradiction(when []Predicate) string {
	byArg := map[string][]Predicate{}
	for _, p := range when {
		if p.In != nil && len(p.In) == 0 {
			return fmt.Sprintf("%s is tested against an empty in list", p.Arg)
		}
		byArg[p.Arg] = append(byArg[p.Arg], p)
	}
	for _, arg := range sortedKeys(byArg) {
		ps := byArg[arg]
		var eq *Scalar
		lo, hi := math.Inf(-1), math.Inf(1)
		loOpen, hiOpen := false, false
		absent, other := false, false
		for _, p := range ps {
			switch {
			case p.Exists != nil && !*p.Exists:
				absent = true
			case p.Exists != nil:
			case p.Equals != nil:
				other = true
				if eq != nil && !reflect.DeepEqual(eq.V, p.Equals.V) {
					return fmt.Sprintf("%s must equal both %v and %v", arg, eq.V, p.Equals.V)
				}
				eq = p.Equals
			default:
				other = true
			}
			if p.Gt != nil && *p.Gt >= lo {
				lo, loOpen = *p.Gt, true
			}
			if p.Gte != nil && *p.Gte > lo {
				lo, loOpen = *p.Gte, false
			}
			if p.Lt != nil && *p.Lt <= hi {
				hi, hiOpen = *p.Lt, true
			}
			if p.Lte != nil && *p.Lte < hi {
				hi, hiOpen = *p.Lte, false
			}
		}
		if absent && other {
			return fmt.Sprintf("%s must be absent and also hold a value", arg)
		}
		if lo > hi || (lo == hi && (loOpen || hiOpen)) {
			return fmt.Sprintf("no number satisfies every bound on %s", arg)
		}
		if eq != nil {
			for _, p := range ps {
				if p.In != nil {
					in := false
					for _, v := range p.In {
						in = in || reflect.DeepEqual(v.V, eq.V)
					}
					if !in {
						return fmt.Sprintf("%s must equal %v, which its in list does not hold", arg, eq.V)
					}
				}
			}
		}
	}
	return ""
}

// lintOrigin points out where a fetch tool and a sending tool meet with
// no word on self-published destinations (the deny default then refuses
// the form a site publishes on its own page), and a setting that cannot
// act because no tool gives output an origin.
func lintOrigin(add func(int, string, string, string, ...any), line int, tool string, c *Contract, fetchers []string) {
	// A tool that names no sink_params (reply_to_email answers the mail
	// it was given) has no destination the web could have published.
	sink := (c.Exfiltrating == nil || *c.Exfiltrating) && len(c.SinkParams) > 0
	switch {
	case c.OnSelfPublished != "" && len(fetchers) == 0:
		add(line, lintOriginUnknown, tool, "%s sets on_self_published, but no contract declares fetches: no output has a known origin, so no destination is self-published", tool)
	case sink && c.OnSelfPublished == "" && c.OnFirstParty != "ask" && c.OnTaint != "ask" && len(fetchers) > 0:
		add(line, lintOriginUnset, tool, "%s sends and %s fetches pages: a destination a site publishes on its own page is denied; set on_self_published: ask to ask a human instead, or deny to keep it denied", tool, strings.Join(fetchers, ", "))
	}
}

// lintLimits reports limits that count nothing: a cost with no tenant
// ceiling to spend, a rate on a rule that refuses every call it matches.
func lintLimits(add func(int, string, string, string, ...any), root *yaml.Node, f *File, spec *File) {
	for j, b := range f.Rules {
		if b.Rate != "" && b.Action == "deny" {
			add(lineOf(root, "rules", j), lintRateOnDeny, b.ID, "rule %s denies every call it matches: its rate %s never counts one", b.ID, b.Rate)
		}
	}
	if len(spec.Tenants) > 0 {
		return
	}
	for _, tool := range sortedKeys(f.Tools) {
		if c := f.Tools[tool]; c != nil && c.Cost != nil {
			add(lineOf(root, "tools", tool), lintCostUncounted, tool, "%s has a cost, but the policy has no tenants: no ceiling counts it", tool)
		}
	}
	for _, server := range sortedKeys(f.Servers) {
		for _, tool := range sortedKeys(f.Servers[server]) {
			if c := f.Servers[server][tool]; c != nil && c.Cost != nil {
				add(lineOf(root, "servers", server, tool), lintCostUncounted, tool, "%s has a cost, but the policy has no tenants: no ceiling counts it", tool)
			}
		}
	}
}
