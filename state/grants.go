package state

import (
	"database/sql"
	"errors"
	"time"
)

// Grant is an answer the gateway took: bound to one call (server, tool
// and argument digest), usable once until it expires.
type Grant struct {
	ID        string // the ask's id
	Server    string
	Tool      string
	Digest    string
	Principal string
	Approver  string
	Approve   bool
	Expires   time.Time
	Granted   time.Time
	Used      time.Time // zero: not used
	UsedBy    string    // the session and call that used it
}

// Settle marks ask id settled, its answer taken into the log, and
// records the grant made from it (nil for an answer that makes none: an
// accepted definition, a refused one). Both or neither: a restart finds
// the ask either still waiting with its answer, or settled with its
// grant. Settling an ask twice is refused.
func (s *Store) Settle(id string, at time.Time, g *Grant) error {
	return s.write("settling ask "+id, func(tx runner) error {
		res, err := tx.Exec(`UPDATE asks SET settled_at = ? WHERE id = ? AND settled_at IS NULL`, formatTime(at), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			if err != nil {
				return err
			}
			return refuse("ask %q is not pending: it was settled, or never recorded", id)
		}
		if g == nil {
			return nil
		}
		_, err = tx.Exec(`INSERT INTO grants (id, server, tool, digest, principal, approver, approve, expires_at, granted_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, g.Server, g.Tool, g.Digest, g.Principal, g.Approver, boolInt(g.Approve), formatTime(g.Expires), formatTime(g.Granted))
		return err
	})
}

// ErrUsed is a grant a call already used.
var ErrUsed = errors.New("the grant was already used")

// UseGrant spends grant id for the call by (its session and id) at at.
// The check and the mark are one statement in one transaction, so of any
// number of calls racing for a grant, in this process or in others on
// the same file, exactly one is told yes; the others get ErrUsed.
func (s *Store) UseGrant(id, by string, at time.Time) error {
	return s.write("using grant "+id, func(tx runner) error {
		res, err := tx.Exec(`UPDATE grants SET used_at = ?, used_by = ? WHERE id = ? AND used_at IS NULL`, formatTime(at), by, id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 1 {
			return err
		}
		g, found, err := getGrant(tx, id)
		switch {
		case err != nil:
			return err
		case !found:
			return refuse("no grant %q", id)
		}
		return &Refusal{Why: "grant " + id + " was already used by " + g.UsedBy, used: true}
	})
}

const grantColumns = `id, server, tool, digest, principal, approver, approve, expires_at, granted_at, used_at, used_by`

func getGrant(q rowQuerier, id string) (Grant, bool, error) {
	var g Grant
	var expires, granted, used, usedBy sql.NullString
	err := q.QueryRow(`SELECT `+grantColumns+` FROM grants WHERE id = ?`, id).
		Scan(&g.ID, &g.Server, &g.Tool, &g.Digest, &g.Principal, &g.Approver, &g.Approve, &expires, &granted, &used, &usedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return Grant{}, false, nil
	}
	for _, f := range []struct {
		to *time.Time
		s  sql.NullString
	}{{&g.Expires, expires}, {&g.Granted, granted}, {&g.Used, used}} {
		if err == nil {
			*f.to, err = parseTime(f.s)
		}
	}
	g.UsedBy = usedBy.String
	return g, err == nil, err
}

// GetGrant returns grant id, used or not.
func (s *Store) GetGrant(id string) (Grant, bool, error) {
	g, found, err := getGrant(s.run(), id)
	if err != nil {
		return g, false, s.explain("reading grant "+id, err)
	}
	return g, found, nil
}

// Spent is the count of calls session made of tool on server.
func (s *Store) Spent(session, server, tool string) (int, error) {
	var used int
	err := s.run().QueryRow(`SELECT used FROM budgets WHERE session = ? AND server = ? AND tool = ?`, session, server, tool).Scan(&used)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, s.explain("reading a budget", err)
	}
	return used, nil
}

// Budget is one tool's count of a session's calls.
type Budget struct {
	Server, Tool string
	Used         int
}

// SaveBudgets records what a session used of its budgets, as the
// gateway counted them when the session ended: for an operator to read.
// The log stays what they are counted from (verify recomputes them), and
// a new session starts its own.
func (s *Store) SaveBudgets(session string, used []Budget) error {
	if len(used) == 0 {
		return nil
	}
	return s.write("recording the budgets of session "+session, func(tx runner) error {
		for _, b := range used {
			_, err := tx.Exec(`INSERT INTO budgets (session, server, tool, used) VALUES (?, ?, ?, ?)
				ON CONFLICT (session, server, tool) DO UPDATE SET used = excluded.used`, session, b.Server, b.Tool, max(b.Used, 0))
			if err != nil {
				return err
			}
		}
		return nil
	})
}
