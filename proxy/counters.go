package proxy

import (
	"time"

	"bailiff/audit"
	"bailiff/state"
)

// Counters keeps a ledger's counts in the state database, shared by
// every gateway and run process that uses it.
type Counters struct{ Store *state.Store }

// LockCounters takes the counters for one step across processes.
func (c Counters) LockCounters() (func(), error) { return c.Store.LockCounters() }

// CountersSince reads what changed after version.
func (c Counters) CountersSince(version int64) ([]audit.Counter, int64, time.Time, error) {
	rows, now, last, err := c.Store.CountersSince(version)
	out := make([]audit.Counter, len(rows))
	for i, r := range rows {
		out[i] = audit.Counter(r)
	}
	return out, now, last, err
}

// SaveCounters writes one step's changes.
func (c Counters) SaveCounters(prune, rows []audit.Counter, last time.Time) (int64, error) {
	conv := func(in []audit.Counter) []state.Counter {
		out := make([]state.Counter, len(in))
		for i, r := range in {
			out[i] = state.Counter(r)
		}
		return out
	}
	return c.Store.SaveCounters(conv(prune), conv(rows), last)
}
