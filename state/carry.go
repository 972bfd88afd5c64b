package state

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Carry is an approval a later session of the same audit log and
// principal may take up: an ask of an earlier session answered approve,
// whose grant (if the earlier session took it) was never used. The
// gateway checks its signature and expiry before it counts; this only
// finds it.
type Carry struct {
	Ask    Ask
	Answer Answer
	// Granted is whether the earlier session took the answer into its
	// log (the ask is settled, with its grant).
	Granted bool
}

// Carryable lists the approvals asked in log for principal by sessions
// other than session, approved and not used, oldest first.
func (s *Store) Carryable(log, principal, session string) ([]Carry, error) {
	rows, err := s.run().Query(`SELECT `+prefixed("a.", askColumns)+`,
			n.answer, n.approver, n.key, n.sig, n.signed_at, n.given_at, g.id IS NOT NULL
		FROM asks a JOIN answers n ON n.ask_id = a.id LEFT JOIN grants g ON g.id = a.id
		WHERE a.log = ? AND a.principal = ? AND a.session != ? AND a.kind = 'call' AND n.answer = 'approve'
			AND g.used_at IS NULL AND (g.id IS NULL OR g.approve = 1)
		ORDER BY a.asked_at, a.id`, log, principal, session)
	if err != nil {
		return nil, s.explain("listing the approvals a new session may use", err)
	}
	defer rows.Close()
	var out []Carry
	var bad error
	for rows.Next() {
		c, err := scanCarry(rows)
		if err != nil {
			// One row that does not read (an edited time) is that row's
			// loss, not every other approval's: it is skipped and named.
			bad = errors.Join(bad, fmt.Errorf("ask %q: %v", c.Ask.ID, err))
			continue
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain("listing the approvals a new session may use", err)
	}
	if bad != nil {
		return out, fmt.Errorf("state database %s: approvals skipped: %w", s.path, bad)
	}
	return out, nil
}

func scanCarry(r scanner) (Carry, error) {
	var c Carry
	var given sql.NullString
	a, err := scanAsk(r, &c.Answer.Answer, &c.Answer.Approver, &c.Answer.Key, &c.Answer.Sig, &c.Answer.Signed, &given, &c.Granted)
	c.Ask = a
	if err != nil {
		return c, err
	}
	c.Answer.Given, err = parseTime(given)
	return c, err
}

// prefixed qualifies each of a comma-separated column list with p.
func prefixed(p, columns string) string {
	cols := strings.Split(columns, ", ")
	for i, c := range cols {
		cols[i] = p + c
	}
	return strings.Join(cols, ", ")
}

// Unspent lists the ids of the approvals asked in log that the database
// holds as approved and not used: what an unclean stop may have left
// behind the log (see Reconcile).
func (s *Store) Unspent(log string) ([]string, error) {
	rows, err := s.run().Query(`SELECT a.id FROM asks a JOIN answers n ON n.ask_id = a.id LEFT JOIN grants g ON g.id = a.id
		WHERE a.log = ? AND a.kind = 'call' AND n.answer = 'approve' AND g.used_at IS NULL ORDER BY a.id`, log)
	if err != nil {
		return nil, s.explain("listing the unused approvals", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.explain("listing the unused approvals", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain("listing the unused approvals", err)
	}
	return ids, nil
}

// Reconcile records that the log shows approval id used by the call by
// at at, when the database does not: the gateway writes the log first,
// and stopped before it wrote here. The ask is settled and its grant
// made (from the ask and its answer) if the stop came before that too.
// The log wins: whatever the database said, the approval is spent.
func (s *Store) Reconcile(id, by string, at time.Time) error {
	return s.write("reconciling approval "+id+" with the log", func(tx runner) error {
		if _, err := tx.Exec(`UPDATE asks SET settled_at = ? WHERE id = ? AND settled_at IS NULL`, formatTime(at), id); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT INTO grants (id, server, tool, digest, principal, approver, approve, expires_at, granted_at, used_at, used_by)
			SELECT a.id, a.server, a.tool, a.digest, a.principal, n.approver, 1, ?, ?, ?, ?
			FROM asks a JOIN answers n ON n.ask_id = a.id WHERE a.id = ?
			ON CONFLICT (id) DO UPDATE SET used_at = excluded.used_at, used_by = excluded.used_by WHERE grants.used_at IS NULL`,
			formatTime(at), formatTime(at), formatTime(at), by, id)
		return err
	})
}

// AnswersVersion changes whenever an answer may have been recorded since
// it was last read: SQLite's data_version moves on a commit by any other
// connection (bailiff approve, another gateway), and answers recorded
// through this store are counted here. A gateway looks for approvals of
// earlier sessions at every call only when it has moved, so a call pays
// one pragma, not a query over the asks.
//
// On PostgreSQL, notifications take the place of data_version (see
// answersVersionPG).
func (s *Store) AnswersVersion() (string, error) {
	if s.pg != nil {
		return s.answersVersionPG(), nil
	}
	var v int64
	if err := s.run().QueryRow("PRAGMA data_version").Scan(&v); err != nil {
		return "", s.explain("reading the data version", err)
	}
	return fmt.Sprintf("%d/%d", v, s.answered.Load()), nil
}
