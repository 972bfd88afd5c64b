package report

import (
	"cmp"
	"fmt"
	"html"
	"slices"
	"strings"
	"time"

	"bailiff/audit"
	"bailiff/engine"
)

// maxTenantCharts bounds the tenants charted one by one, most spent
// first, and maxPeriods the periods a chart and the table show, the
// latest.
const (
	maxTenantCharts = 10
	maxPeriods      = 60
)

// tenantPeriods is one tenant's periods under one window, in time order.
type tenantPeriods struct {
	tenant, window string
	periods        []audit.TenantPeriod
}

// tenantList is each tenant's periods by window, the tenants that spent
// most first, and the tenants that were only refused.
func (p *Pack) tenantList() []tenantPeriods {
	type key struct{ tenant, window string }
	by := map[key]*tenantPeriods{}
	total := map[string]int64{}
	for k, s := range p.Spending {
		kk := key{k.Tenant, k.Window}
		if by[kk] == nil {
			by[kk] = &tenantPeriods{tenant: k.Tenant, window: k.Window}
		}
		by[kk].periods = append(by[kk].periods, k)
		total[k.Tenant] += s.Spent
	}
	for t := range p.LimitRefused {
		if _, ok := total[t]; !ok {
			by[key{t, ""}] = &tenantPeriods{tenant: t}
		}
	}
	var out []tenantPeriods
	for _, tp := range by {
		slices.SortFunc(tp.periods, func(a, b audit.TenantPeriod) int { return a.Start.Compare(b.Start) })
		if len(tp.periods) > maxPeriods {
			tp.periods = tp.periods[len(tp.periods)-maxPeriods:]
		}
		out = append(out, *tp)
	}
	slices.SortFunc(out, func(a, b tenantPeriods) int {
		if ta, tb := total[a.tenant], total[b.tenant]; ta != tb {
			return cmp.Compare(tb, ta)
		}
		if c := strings.Compare(a.tenant, b.tenant); c != 0 {
			return c
		}
		return strings.Compare(a.window, b.window)
	})
	return out
}

// periodLabel names a period by its start as its window counts it: a
// calendar day or month by its date in the window's zone, a fixed window
// by its start in UTC.
func periodLabel(k audit.TenantPeriod, s *audit.PeriodSpend) string {
	if kind, zone, ok := strings.Cut(k.Window, " "); ok && (kind == "day" || kind == "month") {
		if loc, err := time.LoadLocation(zone); err == nil {
			if kind == "month" {
				return k.Start.In(loc).Format("2006-01")
			}
			return k.Start.In(loc).Format("2006-01-02")
		}
	}
	if s.End.Sub(k.Start)%(24*time.Hour) == 0 && k.Start.Hour() == 0 && k.Start.Minute() == 0 {
		return k.Start.Format("2006-01-02")
	}
	return k.Start.Format("2006-01-02 15:04")
}

// ceilings is a period's ceiling, or the ceilings it had in turn.
func ceilings(s *audit.PeriodSpend) string {
	var out []string
	for _, c := range s.Ceilings {
		out = append(out, fmt.Sprint(c))
	}
	return strings.Join(out, " then ")
}

// mdTenants writes each tenant's spending against its ceiling, period by
// period, and the calls the tenant budget and the rates refused; with the
// Mermaid charts when mermaid is set. Nothing without tenant budgets or
// rates.
func (p *Pack) mdTenants(b *mdWriter, mermaid bool) {
	tenants := p.tenantList()
	if len(tenants) == 0 {
		return
	}
	b.w("## Tenant spending\n\n")
	b.w("What each tenant's forwarded calls spent of its ceiling, per period of its window: a failed call gives its cost back, and PEAK is the most the period held at once. A call that would take the period past its ceiling is refused by check tenant-budget; a call past a rate, by check rate.\n\n")
	if mermaid {
		charted := 0
		for _, tp := range tenants {
			if len(tp.periods) == 0 {
				continue
			}
			if charted++; charted > maxTenantCharts {
				break
			}
			labels := make([]string, len(tp.periods))
			spent := make([]string, len(tp.periods))
			ceiling := make([]string, len(tp.periods))
			for j, k := range tp.periods {
				s := p.Spending[k]
				labels[j], spent[j], ceiling[j] = periodLabel(k, s), fmt.Sprint(s.Spent), fmt.Sprint(s.Ceiling)
			}
			b.w("```mermaid\nxychart-beta\n    title \"Tenant %s, window %s: spent per period (bars) and ceiling (line)\"\n    x-axis [%s]\n", chartLabel(tp.tenant), chartLabel(tp.window), chartLabels(labels))
			b.w("    bar [%s]\n    line [%s]\n```\n\n", strings.Join(spent, ", "), strings.Join(ceiling, ", "))
		}
	}
	var rows [][]string
	for _, tp := range tenants {
		for _, k := range tp.periods {
			s := p.Spending[k]
			rows = append(rows, []string{tp.tenant, k.Window, periodLabel(k, s), fmt.Sprint(s.Spent), ceilings(s),
				fmt.Sprint(s.Peak), fmt.Sprint(s.Forwarded), fmt.Sprint(s.Given)})
		}
	}
	if len(rows) > 0 {
		b.table([]string{"TENANT", "WINDOW", "PERIOD", "SPENT", "CEILING", "PEAK", "CALLS", "GIVEN BACK"}, rows)
	}
	p.mdLimitRefusals(b, tenants)
}

// mdLimitRefusals writes the calls the tenant budget and the rates
// refused: counts by tenant, then the first of them.
func (p *Pack) mdLimitRefusals(b *mdWriter, tenants []tenantPeriods) {
	if p.LimitCalls == 0 {
		b.w("No call was refused by the tenant budget or a rate.\n\n")
		return
	}
	var rows [][]string
	named := map[string]bool{}
	for _, tp := range tenants {
		if m := p.LimitRefused[tp.tenant]; m != nil && !named[tp.tenant] {
			named[tp.tenant] = true
			rows = append(rows, []string{tp.tenant, fmt.Sprint(m[string(engine.CheckTenantBudget)]), fmt.Sprint(m[string(engine.CheckRate)])})
		}
	}
	b.table([]string{"TENANT", "REFUSED BY TENANT-BUDGET", "REFUSED BY RATE"}, rows)
	b.w("%s refused by the tenant budget or a rate, in log order.", counted(p.LimitCalls, "call"))
	if len(p.LimitRows) < p.LimitCalls {
		b.w(" The first %d are below; %s lists all %d.", len(p.LimitRows), p.callsCommand("--check tenant-budget --check rate"), p.LimitCalls)
	}
	b.w("\n\n")
	multi := len(p.Logs) > 1
	rows = nil
	for _, r := range p.LimitRows {
		where := r.Session
		if multi {
			where = r.Log + " " + where
		}
		rows = append(rows, []string{r.Tenant, where, r.Call, fmt.Sprint(r.Seq), callTime(r.At), r.Tool, string(r.Decision.Check), r.Decision.Reason})
	}
	b.table([]string{"TENANT", "SESSION", "CALL", "SEQ", "TIME", "TOOL", "CHECK", "WHY"}, rows)
}

// svgTenants draws each tenant's spending per period as columns, with its
// ceiling as a line. Every string in it is escaped; every number is
// computed.
func (p *Pack) svgTenants() string {
	var b strings.Builder
	charted := 0
	for _, tp := range p.tenantList() {
		if len(tp.periods) == 0 {
			continue
		}
		if charted++; charted > maxTenantCharts {
			break
		}
		top := int64(1)
		for _, k := range tp.periods {
			s := p.Spending[k]
			top = max(top, s.Spent, s.Ceiling, s.Peak)
		}
		const y0, height, width, maxColumn = 28, 120, 700, 40
		col := min(max1(width/len(tp.periods)), maxColumn)
		fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"%d\" role=\"img\" aria-label=\"Tenant spending\">\n", y0+height+36)
		fmt.Fprintf(&b, "<text x=\"0\" y=\"16\" font-size=\"14\">Tenant %s, window %s: spent per period (columns) and ceiling (line), up to %d</text>\n",
			html.EscapeString(plain(truncate(tp.tenant, 40))), html.EscapeString(plain(truncate(tp.window, 40))), top)
		var line []string
		for j, k := range tp.periods {
			s := p.Spending[k]
			x := 10 + j*col
			if ht := int(int64(height) * max(s.Spent, 0) / top); ht > 0 {
				fmt.Fprintf(&b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#78b\"/>\n", x, y0+height-ht, max1(col-2), ht)
			}
			cy := y0 + height - int(int64(height)*s.Ceiling/top)
			line = append(line, fmt.Sprintf("%d,%d %d,%d", x, cy, x+col, cy))
		}
		fmt.Fprintf(&b, "<polyline points=\"%s\" fill=\"none\" stroke=\"#c44\" stroke-width=\"2\"/>\n", strings.Join(line, " "))
		first, last := tp.periods[0], tp.periods[len(tp.periods)-1]
		fmt.Fprintf(&b, "<text x=\"10\" y=\"%d\" font-size=\"12\">%s</text>\n", y0+height+16, html.EscapeString(periodLabel(first, p.Spending[first])))
		if len(tp.periods) > 1 {
			fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">%s</text>\n", 10+len(tp.periods)*col, y0+height+16, html.EscapeString(periodLabel(last, p.Spending[last])))
		}
		b.WriteString("</svg>\n")
	}
	return b.String()
}
