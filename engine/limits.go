package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	// A calendar window's zone must read the same on every machine that
	// verifies the log, a minimal container without zoneinfo included.
	_ "time/tzdata"
)

// LocalTenant is the tenant of a principal no identity gave a tenant:
// without identity, every session is the one local tenant's.
const LocalTenant = "local"

// TenantSpec is what one tenant's calls may cost per window.
type TenantSpec struct {
	Ceiling *int64 `yaml:"ceiling" json:"ceiling"`
	// Window is a duration ("24h"), counted from 0001-01-01 UTC so a 24h
	// window starts at midnight UTC, or a calendar "day" or "month" in
	// Zone (an IANA name; UTC when unset).
	Window string `yaml:"window" json:"window"`
	Zone   string `yaml:"zone,omitempty" json:"zone,omitempty"`
}

// Bounds keep every figure a sum of costs can reach far inside an int64,
// and every rate's memory small.
const (
	maxCost    = 1_000_000_000
	maxCeiling = 1_000_000_000_000_000
	maxRate    = 100_000
	minWindow  = time.Second
	maxWindow  = 10 * 366 * 24 * time.Hour
)

type tenantLimit struct {
	ceiling int64
	window  window
}

// window is a tenant's accounting period: fixed-length, or a calendar
// day or month in a zone.
type window struct {
	every time.Duration // 0 for a calendar window
	month bool
	loc   *time.Location
	id    string // names its periods in the ledger: one window, one id
	text  string // as the policy wrote it
}

// bounds is the period that holds t: a call exactly at a reset is the new
// period's.
func (w window) bounds(t time.Time) (start, end time.Time) {
	if w.every > 0 {
		start = t.Truncate(w.every)
		return start, start.Add(w.every)
	}
	y, m, d := t.In(w.loc).Date()
	if w.month {
		return time.Date(y, m, 1, 0, 0, 0, 0, w.loc), time.Date(y, m+1, 1, 0, 0, 0, 0, w.loc)
	}
	return time.Date(y, m, d, 0, 0, 0, 0, w.loc), time.Date(y, m, d+1, 0, 0, 0, 0, w.loc)
}

type rateLimit struct {
	n        int
	per      time.Duration
	src      string
	byTenant bool
	scope    string // whose calls it counts: "rule:<id>", or the contract's key
}

// CheckTenant refuses a tenant name a principal may not carry: "*"
// stands for every tenant the policy does not name, and a blank name or
// one with control characters would read as another in a refusal.
func CheckTenant(name string) error {
	switch {
	case name == "*":
		return errors.New(`tenant "*" stands for every tenant not named in a policy, and is no tenant's name`)
	case name != "" && strings.TrimSpace(name) == "":
		return errors.New("the tenant name is blank")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("the tenant %q holds control characters", name)
	}
	return nil
}

// Uncovered names the tenant whose calls the policy refuses outright:
// it has tenant budgets and gives tenant (LocalTenant for "") no ceiling.
// It is "" when the tenant is covered, or the policy has no budgets.
func (p *Policy) Uncovered(tenant string) string {
	if tenant == "" {
		tenant = LocalTenant
	}
	if p.tenants == nil || p.tenantLimit(tenant) != nil {
		return ""
	}
	return tenant
}

func (s *State) tenant() string {
	if s.Principal.Tenant == "" {
		return LocalTenant
	}
	return s.Principal.Tenant
}

func (p *Policy) tenantLimit(tenant string) *tenantLimit {
	if t, ok := p.tenants[tenant]; ok {
		return t
	}
	return p.tenants["*"]
}

func (r *rateLimit) key(s *State) rateKey {
	k := rateKey{scope: r.scope, by: "principal", who: s.Principal.Subject, n: r.n, per: r.per}
	if r.byTenant {
		k.by, k.who = "tenant", s.tenant()
	}
	return k
}

// limits runs the tenant budget and the rate limits on call c, which rule
// r let through under contract ct.
func limits(p *Policy, s *State, c *Call, ct *contract, r *rule, now time.Time) (Decision, bool) {
	if p.tenants != nil && p.on(CheckTenantBudget) {
		if d, bad := tenantBudget(p, s, ct, now); bad {
			return d, true
		}
	}
	if !p.on(CheckRate) {
		return Decision{}, false
	}
	for _, lim := range [2]*rateLimit{r.rateOf(), ct.rate} {
		if lim == nil {
			continue
		}
		k := lim.key(s)
		if next, full := s.ledger.full(k, now); full {
			return Decision{Verdict: Deny, Check: CheckRate,
				Reason: fmt.Sprintf("rate %s (%s) for %s %s: %s in the last %s; the next call may go at %s",
					lim.src, lim.what(), k.by, quoteOr(k.who), plural(lim.n, "call"), unitWords[lim.per], ceilSecond(next).Format(time.RFC3339))}, true
		}
	}
	return Decision{}, false
}

func (r *rule) rateOf() *rateLimit {
	if r == nil {
		return nil
	}
	return r.rate
}

func (r *rateLimit) what() string {
	if id, ok := cutRule(r.scope); ok {
		return "rule " + id
	}
	return "contract " + r.scope
}

// ceilSecond is t rounded up to a whole second, in UTC: a time a refusal
// may give that is never before the call could go.
func ceilSecond(t time.Time) time.Time {
	up := t.Truncate(time.Second)
	if up.Before(t) {
		up = up.Add(time.Second)
	}
	return up.UTC()
}

// unitWords names a rate's units in its refusal.
var unitWords = map[time.Duration]string{time.Second: "second", time.Minute: "minute", time.Hour: "hour", 24 * time.Hour: "day"}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func quoteOr(s string) string {
	if s == "" {
		return "(unnamed)"
	}
	return strconv.Quote(s)
}

func tenantBudget(p *Policy, s *State, ct *contract, now time.Time) (Decision, bool) {
	tenant := s.tenant()
	t := p.tenantLimit(tenant)
	if t == nil {
		return Decision{Verdict: Deny, Check: CheckTenantBudget,
			Reason: fmt.Sprintf("tenant %q has no ceiling in the policy (name it under tenants, or give \"*\" a ceiling)", tenant)}, true
	}
	if ct.cost == 0 {
		return Decision{}, false
	}
	start, end := t.window.bounds(now)
	spent := s.ledger.spent[period{tenant, t.window.id, start.Unix()}]
	if spent <= t.ceiling-ct.cost {
		// Compared so: spent read from a shared store may be anything,
		// and a sum could wrap.
		return Decision{}, false
	}
	return Decision{Verdict: Deny, Check: CheckTenantBudget,
		Reason: fmt.Sprintf("tenant %q has spent %d of its ceiling %d this %s window and this call costs %d; the window resets at %s",
			tenant, spent, t.ceiling, t.window.text, ct.cost, end.UTC().Format(time.RFC3339))}, true
}

// consume applies what a forwarded call spends and counts against.
func (s *State) consume(p *Policy, c *Call, d Decision, now time.Time) {
	if !p.limits {
		return
	}
	var r *rule
	if p.ruleRates {
		r = p.ruleByID(d.Rule)
	}
	ct := p.contractFor(callRef(s, c))
	if p.tenants != nil && ct.cost > 0 {
		if t := p.tenantLimit(s.tenant()); t != nil {
			start, end := t.window.bounds(now)
			ch := charge{at: period{s.tenant(), t.window.id, start.Unix()}, cost: ct.cost,
				spend: Spend{Tenant: s.tenant(), Window: t.window.text, Start: start.UTC(), End: end.UTC(), Ceiling: t.ceiling, Session: s.Session, Call: c.ID}}
			s.ledger.add(ch.at, ct.cost)
			s.ledger.tell(ch.spend, now, ct.cost)
			if c.ID != "" {
				s.charges[c.ID] = ch
			}
		}
	}
	for _, lim := range [2]*rateLimit{r.rateOf(), ct.rate} {
		if lim != nil {
			s.ledger.note(lim.key(s), now)
		}
	}
}

// refund gives back, at now, what a failed call spent. Its rate slot
// stays taken: it reached the server all the same.
func (s *State) refund(callID string, now time.Time) {
	if ch, ok := s.charges[callID]; ok {
		s.ledger.add(ch.at, -ch.cost)
		s.ledger.tell(ch.spend, now, -ch.cost)
		delete(s.charges, callID)
	}
}

func cutRule(scope string) (string, bool) { return strings.CutPrefix(scope, "rule:") }

// ruleByID is the rule with id, nil for none (the default deny's).
func (p *Policy) ruleByID(id string) *rule {
	for i := range p.rules {
		if p.rules[i].id == id {
			return &p.rules[i]
		}
	}
	return nil
}

// HasLimits tells whether the policy counts across sessions: tenant
// budgets, or any rate. Its sessions must then share one ledger, fed in
// time order.
func (p *Policy) HasLimits() bool { return p.limits }

// Configures tells whether the policy gives check c anything to decide:
// the tenant budget needs tenants, the rate check a rate. Every other
// check always has work. Ablate lists a counting check only where some
// policy configures it, so a policy written before they existed keeps
// the same table, and a gate on dead checks does not start failing.
func (p *Policy) Configures(c Check) bool {
	switch c {
	case CheckTenantBudget:
		return p.tenants != nil
	case CheckRate:
		return p.ruleRates || p.contractRates
	}
	return true
}

// noteLimits sets what HasLimits says, once, so a policy without limits
// pays nothing for them on the path every call takes.
func (p *Policy) noteLimits() {
	for i := range p.rules {
		p.ruleRates = p.ruleRates || p.rules[i].rate != nil
	}
	found := false
	each := func(c *contract) { found = found || c.rate != nil }
	p.contracts.each(each)
	for _, cs := range p.servers {
		cs.each(each)
	}
	p.contractRates = found
	p.limits = found || p.ruleRates || p.tenants != nil
}
