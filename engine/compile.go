package engine

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Check names one step of the decision order. Every check but the rules
// themselves can be switched off by name with Policy.Without.
type Check string

// The checks, in the order they run.
const (
	CheckPinning Check = "pinning"
	CheckRules   Check = "rules"
	CheckScopes  Check = "scopes"
	CheckBudget  Check = "budget"
	// CheckTenantBudget and CheckRate count across sessions: what the
	// tenant has spent this window, and how often the calls went.
	CheckTenantBudget Check = "tenant-budget"
	CheckRate         Check = "rate"
	CheckPath         Check = "path"
	CheckPattern      Check = "pattern"
	CheckTaint        Check = "taint"
	CheckApproval     Check = "approval"
	CheckDefaultDeny  Check = "default-deny"
	// CheckInternal is no check of the policy: the engine itself failed
	// on this input, and the call is refused. It is deterministic, so
	// verify recomputes it.
	CheckInternal Check = "internal"
)

// Switchable lists the checks Policy.Without accepts, in decision order.
// The rules and the default deny are the firewall itself and cannot be
// switched off; single rules can, as "rule:<id>".
func Switchable() []Check {
	return []Check{CheckPinning, CheckScopes, CheckBudget, CheckTenantBudget, CheckRate, CheckPath, CheckPattern, CheckTaint, CheckApproval}
}

// Policy is a compiled policy, ready for Decide. It is immutable and safe
// for concurrent use.
type Policy struct {
	canonical []byte
	version   string
	// name and source are the file as Load was given it, for Lint's
	// lines.
	name   string
	source []byte

	rules     []rule
	contracts contractSet             // the top-level tools
	servers   map[string]*contractSet // per server, tried first
	sources   []SourceSpec            // trusted: their output does not taint
	first     []SourceSpec            // first-party: their output taints at that tier
	redact    []Path
	ttl       time.Duration
	tenants   map[string]*tenantLimit // nil: no tenant budgets
	limits    bool                    // tenant budgets or any rate (HasLimits)
	ruleRates bool                    // some rule has a rate
	// contractRates: some contract has a rate.
	contractRates bool

	disabled      checkSet
	disabledRules map[string]bool
}

// checkSet is a set of checks as bits, so the hot path tests a switch
// without a map lookup.
type checkSet uint16

func checkBit(c Check) checkSet {
	for i, s := range Switchable() {
		if s == c {
			return 1 << i
		}
	}
	return 0
}

type rule struct {
	id, server, tool string
	serverG, toolG   glob
	scopes           []string
	preds            []pred
	action           Verdict
	rate             *rateLimit
	reason           string // the reason a matching rule gives
	// never marks a rule whose conditions contradict: it matches no
	// call (lint says why).
	never bool
}

type contract struct {
	spec         *Contract
	exfil        exfilMode
	sinks        []Path
	trusted      []destPattern
	onTaint      Verdict
	onSelf       Verdict   // for a destination its own site alone published
	onFirst      Verdict   // for a destination first-party output alone holds
	lists        bool      // a search or index tool: its URLs point, not publish
	fetches      *Path     // the URL argument of a fetch tool
	not          []notPath // payload paths whose names look like destinations
	writes       []Path
	prefixes     []string
	maxCalls     int   // -1: no budget
	cost         int64 // what a forwarded call spends of its tenant's ceiling
	rate         *rateLimit
	patterns     []argPattern
	hasContract  bool
	hasExfilFlag bool
}

type exfilMode int

const (
	exfilAuto exfilMode = iota // gated when a destination-shaped argument is present
	exfilYes
	exfilNo
)

type argPattern struct {
	path Path
	src  string
	re   *regexp.Regexp
}

// Redact lists the argument paths the policy removes before anything is
// written to an audit log.
func (p *Policy) Redact() []Path { return p.redact }

// ApprovalTTL is how long a grant without its own expiry stays usable.
func (p *Policy) ApprovalTTL() time.Duration { return p.ttl }

func (p *Policy) on(c Check) bool { return p.disabled&checkBit(c) == 0 }

type compileErr struct {
	keys   []any
	reason string
}

func compile(f *File, name string, root *yaml.Node) (*Policy, error) {
	p, ce := compileFile(f)
	if ce != nil {
		return nil, &LoadError{File: name, Line: lineOf(root, ce.keys...), Reason: ce.reason}
	}
	return p, nil
}

// maxTTL bounds how long an approval lasts.
const maxTTL = 10 * 365 * 24 * time.Hour

func fail(reason string, keys ...any) *compileErr { return &compileErr{keys: keys, reason: reason} }

func compileFile(f *File) (*Policy, *compileErr) {
	if f.Version != FormatVersion {
		if f.Version == 0 {
			return nil, fail("missing `version: 1`", "version")
		}
		return nil, fail(fmt.Sprintf("unsupported policy version %d (this bailiff reads version %d)", f.Version, FormatVersion), "version")
	}
	expanded, ce := expandPacks(f)
	if ce != nil {
		return nil, ce
	}
	if expanded, ce = expandLists(expanded); ce != nil {
		return nil, ce
	}
	f = expanded
	p := &Policy{ttl: defaultApprovalTTL}
	seen := map[string]bool{}
	for i, rs := range f.Rules {
		r, ce := compileRule(rs, i)
		if ce != nil {
			return nil, ce
		}
		if seen[r.id] {
			return nil, fail(fmt.Sprintf("duplicate rule id %q", r.id), "rules", i, "id")
		}
		seen[r.id] = true
		p.rules = append(p.rules, r)
	}
	if p.contracts, ce = compileSet(f.Tools, "tools"); ce != nil {
		return nil, ce
	}
	if p.servers, ce = compileServers(f.Servers); ce != nil {
		return nil, ce
	}
	if p.tenants, ce = compileTenants(f.Tenants); ce != nil {
		return nil, ce
	}
	p.noteLimits()
	if p.sources, ce = compileSources(f.TrustedSources, "trusted_sources"); ce != nil {
		return nil, ce
	}
	if p.first, ce = compileSources(f.FirstParty, "first_party"); ce != nil {
		return nil, ce
	}
	for i, r := range f.Redact {
		pth, err := ParsePath(r)
		if err != nil {
			return nil, fail(err.Error(), "redact", i)
		}
		p.redact = append(p.redact, pth)
	}
	if f.Approval != nil && f.Approval.TTL != "" {
		d, err := time.ParseDuration(f.Approval.TTL)
		if err != nil || d <= 0 {
			return nil, fail(fmt.Sprintf("approval ttl %q is not a positive duration such as 15m", f.Approval.TTL), "approval", "ttl")
		}
		if d > maxTTL {
			// A grant's expiry must be a time a log can hold.
			return nil, fail(fmt.Sprintf("approval ttl %q is longer than %v (ten years)", f.Approval.TTL, maxTTL), "approval", "ttl")
		}
		p.ttl = d
	}
	var err error
	if p.canonical, p.version, err = canonicalize(f); err != nil {
		return nil, fail(err.Error())
	}
	return p, nil
}

func compileRule(rs RuleSpec, i int) (rule, *compileErr) {
	r := rule{id: rs.ID, server: rs.Server, tool: rs.Tool, scopes: rs.Scopes}
	switch {
	case rs.ID == "":
		return r, fail("rule needs an id", "rules", i)
	case strings.HasPrefix(rs.ID, "<") || strings.HasPrefix(rs.ID, "rule:"):
		return r, fail(fmt.Sprintf("rule id %q is reserved", rs.ID), "rules", i, "id")
	case rs.Tool == "":
		return r, fail(fmt.Sprintf("rule %q needs a tool (a glob; \"*\" for every tool)", rs.ID), "rules", i)
	case !validAction(rs.Action):
		return r, fail(fmt.Sprintf("rule %q: action must be allow, deny or ask, not %q", rs.ID, rs.Action), "rules", i, "action")
	}
	if r.server == "" {
		r.server = "*"
	}
	if err := checkGlob(r.tool); err != nil {
		return r, fail(err.Error(), "rules", i, "tool")
	}
	if err := checkGlob(r.server); err != nil {
		return r, fail(err.Error(), "rules", i, "server")
	}
	r.serverG, r.toolG = compileGlob(r.server), compileGlob(r.tool)
	r.action = Verdict(rs.Action)
	r.reason = rs.Reason
	if r.reason == "" {
		r.reason = fmt.Sprintf("rule %s: %s", rs.ID, rs.Action)
	}
	r.never = contradiction(rs.When) != ""
	var ce *compileErr
	if r.rate, ce = compileRate(fmt.Sprintf("rule %q", rs.ID), rs.Rate, rs.RateBy, "rule:"+rs.ID, "rules", i); ce != nil {
		return r, ce
	}
	for j, ps := range rs.When {
		pr, err := compilePred(ps)
		if err != nil {
			return r, fail(fmt.Sprintf("rule %q: %v", rs.ID, err), "rules", i, "when", j)
		}
		r.preds = append(r.preds, pr)
	}
	return r, nil
}

func compileContract(name string, cs *Contract) (*contract, *compileErr) {
	if cs == nil {
		cs = &Contract{}
	}
	c := &contract{spec: cs, maxCalls: -1, onTaint: Deny, hasContract: true}
	if cs.Exfiltrating != nil {
		c.hasExfilFlag = true
		c.exfil = exfilNo
		if *cs.Exfiltrating {
			c.exfil = exfilYes
		}
	}
	for i, s := range cs.SinkParams {
		pth, err := ParsePath(s)
		if err != nil {
			return nil, fail(err.Error(), "tools", name, "sink_params", i)
		}
		c.sinks = append(c.sinks, pth)
	}
	for i, d := range cs.TrustedDestinations {
		dp, err := compileDest(d)
		if err != nil {
			return nil, fail(err.Error(), "tools", name, "trusted_destinations", i)
		}
		c.trusted = append(c.trusted, dp)
	}
	switch cs.OnTaint {
	case "", "deny":
	case "ask":
		c.onTaint = Ask
	default:
		return nil, fail(fmt.Sprintf("tool %q: on_taint must be deny or ask, not %q", name, cs.OnTaint), "tools", name, "on_taint")
	}
	if err := compileOrigin(c, name, cs); err != nil {
		return nil, err
	}
	if err := compileNot(c, name, cs); err != nil {
		return nil, err
	}
	for i, w := range cs.WriteParams {
		pth, err := ParsePath(w)
		if err != nil {
			return nil, fail(err.Error(), "tools", name, "write_params", i)
		}
		c.writes = append(c.writes, pth)
	}
	for i, pre := range cs.AllowedPathPrefixes {
		clean, err := checkPrefix(pre)
		if err != nil {
			return nil, fail(fmt.Sprintf("tool %q: %v", name, err), "tools", name, "allowed_path_prefixes", i)
		}
		c.prefixes = append(c.prefixes, clean)
	}
	if cs.MaxCalls != nil {
		if *cs.MaxCalls < 0 {
			return nil, fail(fmt.Sprintf("tool %q: max_calls must be 0 or more", name), "tools", name, "max_calls")
		}
		c.maxCalls = *cs.MaxCalls
	}
	var ce *compileErr
	if c.cost, ce = compileCost(name, cs.Cost); ce != nil {
		return nil, ce
	}
	if c.rate, ce = compileRate(fmt.Sprintf("tool %q", name), cs.Rate, cs.RateBy, "", "tools", name); ce != nil {
		return nil, ce
	}
	for _, k := range sortedKeys(cs.ArgPatterns) {
		pth, err := ParsePath(k)
		if err != nil {
			return nil, fail(err.Error(), "tools", name, "arg_patterns", k)
		}
		re, err := anchored(cs.ArgPatterns[k])
		if err != nil {
			return nil, fail(fmt.Sprintf("tool %q: arg_patterns %q: bad regex: %v", name, k, err), "tools", name, "arg_patterns", k)
		}
		c.patterns = append(c.patterns, argPattern{path: pth, src: cs.ArgPatterns[k], re: re})
	}
	return c, nil
}
