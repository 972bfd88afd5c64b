package audit

import (
	"slices"
	"time"

	"bailiff/engine"
)

// TenantPeriod names one tenant's accounting period.
type TenantPeriod struct {
	Tenant, Window string
	Start          time.Time
}

// PeriodSpend is what a tenant spent in one period, against its ceiling.
type PeriodSpend struct {
	End            time.Time
	Ceiling, Spent int64
	// Ceilings are the ceilings the period's spends were counted
	// against, in order, when a policy changed within it.
	Ceilings         []int64
	Peak             int64 // the most it held at once (a failed call gives back later)
	Forwarded, Given int   // calls that spent, and those that gave it back
}

// maxLimitRows bounds the refused calls a summary keeps whole.
const maxLimitRows = 20

// tenants is what a summary keeps of tenant budgets and rates.
type tenants struct {
	// Spending is each tenant's spending per period, from the calls in
	// range; LimitRefused counts the calls the tenant budget and the rate
	// refused, by tenant and check, and LimitRows are the first of them
	// (by log, then seq).
	Spending     map[TenantPeriod]*PeriodSpend
	LimitRefused map[string]map[string]int
	LimitRows    []*CallRow
	LimitCalls   int

	ledger *Ledger // the summary's: its sessions' spends are told to it
	tenant string  // the tenant of the session being added
}

// summaryLedger is the ledger the summary's sessions count in: it keeps
// no decision (the records' are taken as they are), only what each spend
// and refund did, in range.
func (s *Summary) summaryLedger() *Ledger {
	if s.ledger == nil {
		s.ledger = NewLedger()
		s.Spending = map[TenantPeriod]*PeriodSpend{}
		s.LimitRefused = map[string]map[string]int{}
		s.ledger.l.OnSpend(func(sp engine.Spend) {
			if !realTime(sp.At) || !s.inRange(sp.At) {
				return
			}
			k := TenantPeriod{sp.Tenant, sp.Window, sp.Start}
			ps := s.Spending[k]
			if ps == nil {
				ps = &PeriodSpend{End: sp.End}
				s.Spending[k] = ps
			}
			if len(ps.Ceilings) == 0 || ps.Ceilings[len(ps.Ceilings)-1] != sp.Ceiling {
				ps.Ceilings = append(ps.Ceilings, sp.Ceiling)
			}
			ps.Ceiling, ps.Spent = sp.Ceiling, ps.Spent+sp.Delta
			ps.Peak = max(ps.Peak, ps.Spent)
			if sp.Delta > 0 {
				ps.Forwarded++
			} else {
				ps.Given++
			}
		})
	}
	return s.ledger
}

// limitRow keeps a call the tenant budget or a rate refused.
func (s *Summary) limitRow(r *CallRow) {
	c := r.Decision.Check
	if r.Verdict != string(engine.Deny) || (c != engine.CheckTenantBudget && c != engine.CheckRate) {
		return
	}
	tenant := r.Tenant
	if s.LimitRefused[tenant] == nil {
		s.LimitRefused[tenant] = map[string]int{}
	}
	s.LimitRefused[tenant][string(c)]++
	s.LimitCalls++
	i, _ := slices.BinarySearchFunc(s.LimitRows, r, func(a, b *CallRow) int {
		if rowBefore(a, b, s.logOrder) {
			return -1
		}
		return 1
	})
	if i < maxLimitRows {
		s.LimitRows = slices.Insert(s.LimitRows, i, r)
		if len(s.LimitRows) > maxLimitRows {
			s.LimitRows = s.LimitRows[:maxLimitRows]
		}
	}
}
