package audit

import (
	"testing"
	"time"

	"bailiff/engine"
)

// FuzzDecodeCounters: rows read from a state database are another
// process's, or anyone's who could write the file: none panics the
// decoder or the ledger it restores, and what decodes encodes back to
// rows that decode to the same.
func FuzzDecodeCounters(f *testing.F) {
	f.Add("acme", "cost day Europe/Berlin", "2026-10-31T23:00:00Z", int64(0), int64(4))
	f.Add("acme", "rate tenant 2 60 tools.add", "2026-11-01T09:00:00.000000000Z", int64(60), int64(1))
	f.Add("ana", "rate principal -1 3600 rule:x", "2026-11-01T09:00:00.000000000Z", int64(3600), int64(1))
	f.Fuzz(func(t *testing.T, tenant, counter, start string, secs, used int64) {
		rows := []Counter{{Tenant: tenant, Counter: counter, WindowStart: start, WindowSecs: secs, Used: used}}
		ps, rs, err := decodeCounters(rows)
		if err != nil {
			return
		}
		l := engine.NewLedger()
		l.Restore(ps, rs)
		_ = l.Spending()
		for i := range rs {
			rs[i].Keep = time.Time{}
		}
		// Saved by a ledger that spent it all: a period is saved as
		// what was added to it, and one with nothing added is not saved.
		spent := 0
		for i := range ps {
			ps[i].Added = ps[i].Spent
			if ps[i].Spent != 0 {
				spent++
			}
		}
		_, again := encodeCounters(ps, rs)
		ps2, rs2, err := decodeCounters(again)
		if err != nil || len(ps2) != spent || len(rs2) != len(rs) {
			t.Fatalf("rows %+v decode, but their encoding %+v does not (%v)", rows, again, err)
		}
	})
}
