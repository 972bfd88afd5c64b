package engine

import (
	"sort"
	"time"
)

// Headroom is what one tenant may still spend in the period that holds
// a moment: its ceiling less what it has spent there.
type Headroom struct {
	Tenant, Window string
	Ceiling, Spent int64
}

// Headroom lists each tenant's headroom at now, by l's spending: the
// tenants the policy names, and those its "*" limit covers that have
// spent in l. Without tenant budgets there is none.
func (p *Policy) Headroom(l *Ledger, now time.Time) []Headroom {
	var out []Headroom
	at := func(tenant string, t *tenantLimit) {
		start, _ := t.window.bounds(now)
		spent := l.spent[period{tenant, t.window.id, start.Unix()}]
		out = append(out, Headroom{Tenant: tenant, Window: t.window.text, Ceiling: t.ceiling, Spent: spent})
	}
	for name, t := range p.tenants {
		if name != "*" {
			at(name, t)
		}
	}
	if star := p.tenants["*"]; star != nil {
		seen := map[string]bool{}
		for per := range l.spent {
			if _, named := p.tenants[per.tenant]; !named && per.window == star.window.id && !seen[per.tenant] {
				seen[per.tenant] = true
				at(per.tenant, star)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tenant < out[j].Tenant })
	return out
}

// HasTenants says whether the policy gives tenants budgets.
func (p *Policy) HasTenants() bool { return p.tenants != nil }
