package state

import (
	"database/sql"
	"os"
	"time"
)

// Counter is one row of the tenant counters: a tenant's spending in one
// period, or one slot of a rate. What the columns hold is the caller's
// (audit's ledger); the store keeps them, and the order of changes.
type Counter struct {
	Tenant, Counter, WindowStart string
	WindowSecs, Used             int64
	// Add says Used is added to what the row holds (never going below
	// zero), not written over it: a change saved late, after a failed
	// save, then adds to what other processes saved meanwhile.
	Add bool
}

// LockCounters takes the counters for one step across processes: every
// gateway sharing this database takes its steps on them one at a time,
// each after the last, so the counts each decision sees are the ones
// the logs rebuild. It blocks until the lock is free.
//
// On PostgreSQL the lock is a row lock in a transaction that the step's
// reads and its save run in, so a replica that dies mid-step, or whose
// connection drops, holds nothing and keeps nothing.
func (s *Store) LockCounters() (unlock func(), err error) {
	if s.pg != nil {
		return s.lockCountersPG()
	}
	f, err := os.OpenFile(s.path+"-counters", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, s.explain("locking the tenant counters", err)
	}
	if err := lockExclusive(f); err != nil {
		f.Close()
		return nil, s.explain("locking the tenant counters", err)
	}
	return func() { f.Close() }, nil // closing lets the lock go
}

// CountersSince is every row written by a change after version, the
// version of the last change, and the time of the last step taken.
func (s *Store) CountersSince(version int64) (rows []Counter, now int64, last time.Time, err error) {
	// Read outside a transaction: the caller holds the counters' lock, so
	// no other writer of them runs, and a write transaction would cost a
	// commit (an fsync) on every step.
	err = s.readCounters(func(tx querierRows) error {
		var lastText string
		if err := tx.QueryRow("SELECT version, last FROM counters_clock WHERE id = 1").Scan(&now, &lastText); err != nil {
			return err
		}
		if lastText != "" {
			if last, err = time.Parse(timeFormat, lastText); err != nil {
				return err
			}
		}
		if now == version {
			return nil
		}
		q, err := tx.Query(`SELECT tenant, counter, window_start, window_secs, used FROM tenant_counters
			WHERE changed > ? ORDER BY tenant, counter, window_start`, version)
		if err != nil {
			return err
		}
		defer q.Close()
		for q.Next() {
			var c Counter
			if err := q.Scan(&c.Tenant, &c.Counter, &c.WindowStart, &c.WindowSecs, &c.Used); err != nil {
				return err
			}
			rows = append(rows, c)
		}
		return q.Err()
	})
	return rows, now, last, err
}

// querierRows is what reading the counters needs of the database.
type querierRows interface {
	QueryRow(query string, args ...any) *sql.Row
	Query(query string, args ...any) (*sql.Rows, error)
}

func (s *Store) readCounters(fn func(querierRows) error) error {
	r := s.run()
	if s.pg != nil && s.pg.ctr != nil {
		r = runner{s.pg.ctr, true}
	}
	if err := fn(r); err != nil {
		return s.explain("reading the tenant counters", err)
	}
	return nil
}

// SaveCounters writes one change: the rows each of prune names (tenant
// and counter) from before its WindowStart are removed (a rate's slots
// no one reads any more), then rows are written over what they name (or
// added to it, see Counter.Add), and the clock moves to last. It returns
// the change's version. The caller holds the counters' lock, so no other
// process writes them between the update and the insert of a new row.
func (s *Store) SaveCounters(prune []Counter, rows []Counter, last time.Time) (version int64, err error) {
	save := func(tx runner) error {
		if err := tx.QueryRow("UPDATE counters_clock SET version = version + 1, last = ? WHERE id = 1 RETURNING version", formatTime(last)).Scan(&version); err != nil {
			return err
		}
		for _, c := range prune {
			if _, err := tx.Exec("DELETE FROM tenant_counters WHERE tenant = ? AND counter = ? AND window_start < ?", c.Tenant, c.Counter, c.WindowStart); err != nil {
				return err
			}
		}
		for _, c := range rows {
			if c.Add {
				res, err := tx.Exec(`UPDATE tenant_counters SET used = CASE WHEN used + ? < 0 THEN 0 ELSE used + ? END, changed = ?
					WHERE tenant = ? AND counter = ? AND window_start = ?`, c.Used, c.Used, version, c.Tenant, c.Counter, c.WindowStart)
				if err != nil {
					return err
				}
				n, err := res.RowsAffected()
				if err != nil {
					return err
				}
				if n == 1 {
					continue
				}
				c.Used = max(c.Used, 0) // a new row: nothing to give back from
			}
			if _, err := tx.Exec(`INSERT INTO tenant_counters (tenant, counter, window_start, window_secs, used, changed)
				VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (tenant, counter, window_start) DO UPDATE SET used = excluded.used, window_secs = excluded.window_secs, changed = excluded.changed`,
				c.Tenant, c.Counter, c.WindowStart, c.WindowSecs, c.Used, version); err != nil {
				return err
			}
		}
		return nil
	}
	if s.pg != nil {
		return version, s.saveCountersPG(save)
	}
	return version, s.write("saving the tenant counters", save)
}
