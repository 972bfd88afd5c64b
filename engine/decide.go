package engine

import (
	"fmt"
	"strings"
	"time"
)

// Verdict is the outcome of a decision.
type Verdict string

// The verdicts. Ask means a human must answer; no answer is a deny.
const (
	Allow Verdict = "allow"
	Deny  Verdict = "deny"
	Ask   Verdict = "ask"
)

// Decision is a verdict and why.
type Decision struct {
	Verdict Verdict
	Check   Check
	Rule    string // the rule that matched, "<implicit-default-deny>" when none did
	Reason  string
	// TaintedBy names the output a tainted destination appeared in.
	TaintedBy *Source
	// Destination is the destination the taint check decided on.
	Destination string
	// Grant is the grant this decision used, if any.
	Grant string
	// Unevaluable is set when the verdict depends on redacted input:
	// Possible lists the verdicts it could have had, Unknown the paths.
	Unevaluable bool
	Possible    []Verdict
	Unknown     []string
}

// failClosed turns a panic inside the engine into a refusal. One bad
// string must never stop a gateway or an offline run, and a decision that
// could not be made is never an allow. A panic is a bug all the same: the
// fuzz tests fail on any CheckInternal decision.
func failClosed(d *Decision) {
	if r := recover(); r != nil {
		*d = Decision{Verdict: Deny, Check: CheckInternal,
			Reason: fmt.Sprintf("bailiff could not decide this call (internal error: %v); it is refused", r)}
	}
}

// purgedLabel marks an unknown that is purged output, not an argument.
const purgedLabel = "\x00purged:"

// maxChoices bounds how many unknown inputs one decision explores; a call
// with more is unevaluable outright.
const maxChoices = 12

// oracle enumerates the values of unknown (redacted) inputs. Decide runs
// the checks once per combination; with no redacted input that is once,
// and nothing is allocated.
type oracle struct {
	picks [maxChoices]uint8
	arity [maxChoices]uint8
	paths [maxChoices]string
	check [maxChoices]Check
	fixed int // picks[:fixed] are replayed from the previous run
	n     int
	over  bool
}

func (o *oracle) choose(arity int, p string, c Check) int {
	if o.n >= maxChoices {
		o.over = true
		return 0
	}
	i := o.n
	o.n++
	if i < o.fixed {
		return int(o.picks[i])
	}
	o.picks[i], o.arity[i], o.paths[i], o.check[i] = 0, uint8(arity), p, c
	return 0
}

// next advances to the next combination, depth first.
func (o *oracle) next() bool {
	for i := o.n - 1; i >= 0; i-- {
		if o.picks[i]+1 < o.arity[i] {
			o.picks[i]++
			o.fixed = i + 1
			o.n = 0
			return true
		}
	}
	return false
}

// Decide is the decision function: the same policy, state, call and time
// give the same decision, forever. It runs the checks in their documented
// order and never reads a clock, the environment or the network.
func Decide(p *Policy, s *State, c *Call, now time.Time) (d Decision) {
	defer failClosed(&d)
	var o oracle
	first := decideOnce(p, s, c, now, &o)
	if o.n == 0 {
		return first
	}
	possible := []Verdict{first.Verdict}
	unknown := map[string]bool{}
	for i := 0; i < o.n; i++ {
		unknown[o.paths[i]] = true
	}
	for !o.over && o.next() {
		d := decideOnce(p, s, c, now, &o)
		for i := 0; i < o.n; i++ {
			unknown[o.paths[i]] = true
		}
		seen := false
		for _, v := range possible {
			seen = seen || v == d.Verdict
		}
		if !seen {
			possible = append(possible, d.Verdict)
		}
	}
	if len(possible) == 1 && !o.over {
		return first
	}
	paths := sortedKeys(unknown)
	var vs, what []string
	for _, v := range possible {
		vs = append(vs, string(v))
	}
	var redacted []string
	for i, p := range paths {
		if rest, ok := strings.CutPrefix(p, purgedLabel); ok {
			paths[i] = "purged " + rest
			what = append(what, paths[i])
		} else {
			redacted = append(redacted, p)
		}
	}
	if len(redacted) > 0 {
		what = append([]string{"redacted " + strings.Join(redacted, ", ")}, what...)
	}
	reason := fmt.Sprintf("verdict depends on %s: it could be %s", strings.Join(what, " and "), strings.Join(vs, " or "))
	if o.over {
		reason = fmt.Sprintf("more than %d redacted inputs decide this call", maxChoices)
	}
	return Decision{Verdict: first.Verdict, Check: o.check[0], Rule: first.Rule, Reason: reason,
		Unevaluable: true, Possible: possible, Unknown: paths}
}

func decideOnce(p *Policy, s *State, c *Call, now time.Time, o *oracle) Decision {
	if p.on(CheckPinning) {
		if d, bad := pinning(s, c); bad {
			return d
		}
	}
	ref := callRef(s, c)
	var scopeMiss *rule
	for i := range p.rules {
		r := &p.rules[i]
		if !r.matches(ref) || (p.disabledRules != nil && p.disabledRules[r.id]) {
			continue
		}
		if !r.matchArgs(c, o) {
			continue
		}
		if p.on(CheckScopes) && !hasAll(s.Principal.Scopes, r.scopes) {
			if scopeMiss == nil && r.action != Deny {
				scopeMiss = r
			}
			continue
		}
		if r.action == Deny {
			return Decision{Verdict: Deny, Check: CheckRules, Rule: r.id, Reason: r.reason}
		}
		d := contracts(p, s, c, r, now, o)
		d.Rule = r.id
		if d.Verdict != Deny && r.action == Ask {
			// The rule asked first; contracts can only make it stricter.
			d = Decision{Verdict: Ask, Check: CheckRules, Rule: r.id, Reason: r.reason}
		}
		if d.Verdict == Allow && d.Check == "" {
			reason := r.reason
			if d.Reason != "" {
				reason += "; " + d.Reason
			}
			d.Check, d.Reason = CheckRules, reason
		}
		if d.Verdict == Ask {
			return approval(p, s, c, now, d)
		}
		return d
	}
	if scopeMiss != nil {
		return Decision{Verdict: Deny, Check: CheckScopes, Rule: scopeMiss.id,
			Reason: fmt.Sprintf("rule %s needs scope %s, which %s does not hold", scopeMiss.id, missing(s.Principal.Scopes, scopeMiss.scopes), subject(s))}
	}
	return Decision{Verdict: Deny, Check: CheckDefaultDeny, Rule: defaultRuleID,
		Reason: "no rule matched: denied by default"}
}

func subject(s *State) string {
	if s.Principal.Subject == "" {
		return "the principal"
	}
	return s.Principal.Subject
}

// callServer is the server a call goes to: its own in a session that spans
// several servers (a gateway's), else the session's.
func callServer(s *State, c *Call) string {
	if c.Server != "" {
		return c.Server
	}
	return s.Server
}

// callRef is the tool a call goes to, on its server.
func callRef(s *State, c *Call) ToolRef {
	return ToolRef{Server: callServer(s, c), Tool: c.Tool}
}

// pinName is the name a call's tool is pinned under: in a session that
// spans several servers, "<server>.<tool>".
func pinName(s *State, c *Call) string {
	return c.ToolRef.In(s.Server)
}

func pinning(s *State, c *Call) (Decision, bool) {
	if ref := callRef(s, c); ref.Server != s.Server && !ref.Routable() {
		// A gateway's pins are listed as "<server>.<tool>" and read back
		// split at the first dot, so server "a.b" with tool "c" and server
		// "a" with tool "b.c" would share one pin. Only the dotless reading
		// is unambiguous; the other is refused rather than guessed.
		return Decision{Verdict: Deny, Check: CheckPinning,
			Reason: fmt.Sprintf("server name %q holds a dot, so its tool %q cannot be told apart from another server's", c.Server, c.Tool)}, true
	}
	name := pinName(s, c)
	pin, ok := s.pins[name]
	if !ok {
		return Decision{Verdict: Deny, Check: CheckPinning,
			Reason: fmt.Sprintf("tool %q was not listed when the session started", name)}, true
	}
	if s.current == nil {
		return Decision{}, false
	}
	cur, ok := s.current[name]
	if !ok {
		return Decision{Verdict: Deny, Check: CheckPinning,
			Reason: fmt.Sprintf("tool %q is no longer listed by the server", name)}, true
	}
	if pin != "" && cur != pin {
		return Decision{Verdict: Deny, Check: CheckPinning,
			Reason: fmt.Sprintf("tool %q changed its definition since the session started (pinned %s, now %s)", name, short(pin), short(cur))}, true
	}
	return Decision{}, false
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	if d == "" {
		return "unknown"
	}
	return d
}

func (r *rule) matchArgs(c *Call, o *oracle) bool {
	all := r.action == Allow
	for i := range r.preds {
		switch r.preds[i].eval(c, all) {
		case no:
			return false
		case unknown:
			if o.choose(2, r.preds[i].path.raw, CheckRules) == 1 {
				return false
			}
		}
	}
	return true
}

func hasAll(have, need []string) bool {
	for _, n := range need {
		found := false
		for _, h := range have {
			found = found || h == n
		}
		if !found {
			return false
		}
	}
	return true
}

func missing(have, need []string) string {
	var m []string
	for _, n := range need {
		if !hasAll(have, []string{n}) {
			m = append(m, n)
		}
	}
	return strings.Join(m, ", ")
}

// approval turns an ask into an allow when an unspent grant bound to this
// exact call is on file.
func approval(p *Policy, s *State, c *Call, now time.Time, d Decision) Decision {
	for _, g := range s.grants {
		if s.spent[g.ID] || !g.Approve {
			continue
		}
		if p.on(CheckApproval) && grantProblem(s, c, g, now) != "" {
			continue
		}
		return Decision{Verdict: Allow, Check: CheckApproval, Rule: d.Rule, Grant: g.ID,
			Reason: fmt.Sprintf("approved by %s (grant %s)", g.Approver, g.ID), TaintedBy: d.TaintedBy, Destination: d.Destination}
	}
	return d
}

// grantProblem says why g cannot approve c at now, or returns "".
func grantProblem(s *State, c *Call, g Grant, now time.Time) string {
	switch {
	case s.spent[g.ID]:
		return fmt.Sprintf("grant %s was already used", g.ID)
	case g.ToolRef != callRef(s, c) || g.Digest != c.Digest:
		return fmt.Sprintf("grant %s is bound to another call", g.ID)
	case g.Approver == "":
		return fmt.Sprintf("grant %s names no approver", g.ID)
	case g.Approver == s.Principal.Subject:
		return fmt.Sprintf("grant %s is self-approved: %s requested the call", g.ID, g.Approver)
	case now.After(g.Expires):
		return fmt.Sprintf("grant %s expired at %s", g.ID, g.Expires.UTC().Format(time.RFC3339))
	}
	return ""
}

// Answer decides a call that was asked, given the human's answer to it.
// A valid approval allows it; a decline, or a grant that is not bound to
// the call, spent, expired or self-approved, denies it.
func Answer(p *Policy, s *State, c *Call, asked Decision, g Grant, now time.Time) (d Decision) {
	defer failClosed(&d)
	if asked.Verdict != Ask {
		return asked
	}
	d = Decision{Check: CheckApproval, Rule: asked.Rule, Grant: g.ID, TaintedBy: asked.TaintedBy, Destination: asked.Destination}
	if p.on(CheckApproval) {
		if problem := grantProblem(s, c, g, now); problem != "" {
			d.Verdict, d.Reason = Deny, problem
			if s.spent[g.ID] {
				d.Grant = "" // a spent grant is not spent again
			}
			return d
		}
	}
	if !g.Approve {
		d.Verdict, d.Reason = Deny, fmt.Sprintf("declined by %s (grant %s)", g.Approver, g.ID)
		return d
	}
	if p.limits {
		// The human answered later than the call was asked: the tenant
		// may have spent its ceiling meanwhile, in any of its sessions.
		if ld, bad := limits(p, s, c, p.contractFor(callRef(s, c)), p.ruleByID(asked.Rule), now); bad {
			ld.Rule, ld.Grant, ld.TaintedBy, ld.Destination = asked.Rule, g.ID, asked.TaintedBy, asked.Destination
			return ld
		}
	}
	d.Verdict, d.Reason = Allow, fmt.Sprintf("approved by %s (grant %s)", g.Approver, g.ID)
	return d
}
