package engine

import (
	"slices"
	"sort"
	"time"
)

// Ledger is what tenants have spent and when rate-limited calls went,
// across sessions: one per gateway, or per offline reading of the logs
// that shared tenants. It is fed in time order (each call's record time),
// which is what lets verify recompute every decision from the logs. It
// is not safe for concurrent use: its owner serializes every session's
// steps on it.
type Ledger struct {
	spent map[period]int64
	rates map[rateKey][]time.Time // the last n times each, oldest first

	// What this ledger changed that is not saved yet, when Track was
	// called: a ledger kept where other processes see it saves these.
	track  bool
	dirtyP map[period]int64        // what it added to each period
	dirtyR map[rateKey][]time.Time // the slots it took

	journal func(Spend) // told every spend and refund, for a reader
}

// Spend is one change of a tenant's spending: a forwarded call's cost,
// or (Delta negative) a failed call's cost given back.
type Spend struct {
	At             time.Time
	Tenant, Window string    // the window as the policy wrote it
	Start, End     time.Time // the period the cost counts in
	Ceiling, Delta int64
	Session, Call  string
}

// OnSpend has fn told every spend and refund, as it is applied: how a
// reader draws spending over time.
func (l *Ledger) OnSpend(fn func(Spend)) { l.journal = fn }

func (l *Ledger) tell(s Spend, at time.Time, delta int64) {
	if l.journal != nil {
		s.At, s.Delta = at, delta
		l.journal(s)
	}
}

// period is one tenant's accounting period, under one way of counting it.
type period struct {
	tenant, window string
	start          int64 // Unix seconds
}

type rateKey struct {
	scope, by, who string
	n              int
	per            time.Duration
}

// charge is what a forwarded call spent, to give back if it fails.
type charge struct {
	spend Spend
	at    period
	cost  int64
}

// NewLedger is an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{spent: map[period]int64{}, rates: map[rateKey][]time.Time{}}
}

// Spending is one tenant's spending in one period.
type Spending struct {
	Tenant, Window string
	Start          time.Time
	Spent          int64
	// Added is, from Changes, what this ledger added to Spent that is
	// not saved yet (negative when it gave back more than it spent).
	Added int64
}

// Spending lists what each tenant spent, per period.
func (l *Ledger) Spending() []Spending {
	out := make([]Spending, 0, len(l.spent))
	for p, n := range l.spent {
		out = append(out, Spending{Tenant: p.tenant, Window: p.window, Start: time.Unix(p.start, 0).UTC(), Spent: n})
	}
	sortSpending(out)
	return out
}

// full tells whether k has had its n calls within the last per before
// now, and when the oldest of them leaves the window.
func (l *Ledger) full(k rateKey, now time.Time) (next time.Time, full bool) {
	ts := l.rates[k]
	if len(ts) < k.n {
		return time.Time{}, false
	}
	oldest := ts[len(ts)-k.n]
	if next = oldest.Add(k.per); next.After(now) {
		return next, true
	}
	return time.Time{}, false
}

func (l *Ledger) note(k rateKey, now time.Time) {
	ts := append(l.rates[k], now)
	if len(ts) > k.n {
		// Keep the last n: copying down bounds the array too.
		ts = append(ts[:0], ts[len(ts)-k.n:]...)
	}
	l.rates[k] = ts
	if l.track {
		l.dirtyR[k] = append(l.dirtyR[k], now)
	}
}

func (l *Ledger) add(p period, n int64) {
	l.spent[p] += n
	if l.track {
		l.dirtyP[p] += n
	}
}

// RateSlots are times of one rate's calls, oldest first: as Changes
// gives them, the slots taken since it was last asked, and Keep, the
// oldest slot the ledger still keeps (the last N for a rate of N per
// Per), before which none matters any more.
type RateSlots struct {
	Scope, By, Who string
	N              int
	Per            time.Duration
	Times          []time.Time
	Keep           time.Time
}

// Track starts noting what changes, for Changes.
func (l *Ledger) Track() {
	l.track, l.dirtyP, l.dirtyR = true, map[period]int64{}, map[rateKey][]time.Time{}
}

// Changes is what this ledger changed that is not saved yet (see Saved):
// each period's spending, whole and what this ledger added to it, and
// each rate's slots it took. What a failed save did not keep is given
// again by the next call, with whatever was changed since.
func (l *Ledger) Changes() ([]Spending, []RateSlots) {
	var ps []Spending
	for p, added := range l.dirtyP {
		ps = append(ps, Spending{Tenant: p.tenant, Window: p.window, Start: time.Unix(p.start, 0).UTC(), Spent: l.spent[p], Added: added})
	}
	var rs []RateSlots
	for k, times := range l.dirtyR {
		r := RateSlots{Scope: k.scope, By: k.by, Who: k.who, N: k.n, Per: k.per, Times: times}
		if kept := l.rates[k]; len(kept) > 0 {
			r.Keep = kept[0]
		}
		rs = append(rs, r)
	}
	sortSpending(ps)
	return ps, rs
}

// Saved says what Changes last gave is kept where the other processes
// read it.
func (l *Ledger) Saved() {
	clear(l.dirtyP)
	clear(l.dirtyR)
}

// Restore takes what the processes sharing the ledger saved: a period's
// spending is what was saved plus what this ledger added and has not
// saved, and rates' slots join the ones it holds (the last N kept).
func (l *Ledger) Restore(ps []Spending, rs []RateSlots) {
	for _, s := range ps {
		p := period{s.Tenant, s.Window, s.Start.Unix()}
		l.spent[p] = s.Spent + l.dirtyP[p]
	}
	for _, r := range rs {
		if r.N < 1 {
			continue // no rate has none: nothing to restore
		}
		k := rateKey{scope: r.Scope, by: r.By, who: r.Who, n: r.N, per: r.Per}
		ts := append(append([]time.Time(nil), l.rates[k]...), r.Times...)
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		ts = slices.CompactFunc(ts, time.Time.Equal)
		if len(ts) > r.N {
			ts = ts[len(ts)-r.N:]
		}
		l.rates[k] = ts
	}
}

func sortSpending(s []Spending) {
	sort.Slice(s, func(i, j int) bool {
		a, b := s[i], s[j]
		if a.Tenant != b.Tenant {
			return a.Tenant < b.Tenant
		}
		if a.Window != b.Window {
			return a.Window < b.Window
		}
		return a.Start.Before(b.Start)
	})
}
