package state

import (
	"database/sql"
	"errors"
	"time"
)

// Ask is an ask waiting for a human's answer out of band.
type Ask struct {
	ID string
	// Kind is "call" for a call waiting for approval, "definition" for a
	// changed tool definition waiting to be accepted.
	Kind      string
	Log       string // the audit log that records the ask
	Session   string
	Server    string
	Tool      string
	Call      string
	Digest    string
	Principal string
	Args      string // JSON
	Reason    string
	Asked     time.Time
	Expires   time.Time // zero: none
	Settled   time.Time // zero: not yet
}

// Answer is a human's signed answer to an ask.
type Answer struct {
	Answer   string // approve or decline
	Approver string // the key's name, for whoever reads it; the gateway takes it from the key
	Key      string
	Sig      string
	Signed   string // the signed time, as signed
	Given    time.Time
}

const askColumns = `id, kind, log, session, server, tool, call, digest, principal, args, reason, asked_at, expires_at, settled_at`

// AddAsk records an ask. The same ask recorded again (a gateway asking
// again for a definition it asked for) is no change; another ask under
// its id is refused.
func (s *Store) AddAsk(a Ask) error {
	if a.Kind != "call" && a.Kind != "definition" {
		return refuse("an ask's kind is call or definition, not %q", a.Kind)
	}
	return s.write("recording ask "+a.ID, func(tx runner) error {
		old, found, err := getAsk(tx, a.ID)
		if err != nil {
			return err
		}
		if found {
			old.Asked, old.Expires, old.Settled = a.Asked, a.Expires, a.Settled
			if old != a {
				return refuse("ask %s is already recorded, for another call", a.ID)
			}
			return nil
		}
		_, err = tx.Exec(`INSERT INTO asks (`+askColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
			a.ID, a.Kind, a.Log, a.Session, a.Server, a.Tool, a.Call, a.Digest, a.Principal, a.Args, a.Reason,
			formatTime(a.Asked), nullTime(a.Expires))
		return err
	})
}

type rowQuerier interface {
	QueryRow(query string, args ...any) *sql.Row
	Query(query string, args ...any) (*sql.Rows, error)
}

type scanner interface{ Scan(dest ...any) error }

// scanAsk scans askColumns, and then into extra whatever follows them.
func scanAsk(r scanner, extra ...any) (Ask, error) {
	var a Ask
	var asked, expires, settled sql.NullString
	err := r.Scan(append([]any{&a.ID, &a.Kind, &a.Log, &a.Session, &a.Server, &a.Tool, &a.Call, &a.Digest, &a.Principal, &a.Args, &a.Reason,
		&asked, &expires, &settled}, extra...)...)
	if err != nil {
		return a, err
	}
	if a.Asked, err = parseTime(asked); err != nil {
		return a, err
	}
	if a.Expires, err = parseTime(expires); err != nil {
		return a, err
	}
	a.Settled, err = parseTime(settled)
	return a, err
}

func getAsk(q rowQuerier, id string) (Ask, bool, error) {
	a, err := scanAsk(q.QueryRow(`SELECT `+askColumns+` FROM asks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Ask{}, false, nil
	}
	return a, err == nil, err
}

// GetAsk returns the ask id, settled or not.
func (s *Store) GetAsk(id string) (Ask, bool, error) {
	a, found, err := getAsk(s.run(), id)
	if err != nil {
		return a, false, s.explain("reading ask "+id, err)
	}
	return a, found, nil
}

// Pending returns the asks with no answer that the gateway has not
// settled, oldest first: those recorded in log, or every log's when log
// is "".
func (s *Store) Pending(log string) ([]Ask, error) {
	rows, err := s.run().Query(`SELECT `+askColumns+` FROM asks
		WHERE settled_at IS NULL AND id NOT IN (SELECT ask_id FROM answers) AND (? = '' OR log = ?)
		ORDER BY asked_at, id`, log, log)
	if err != nil {
		return nil, s.explain("listing the pending asks", err)
	}
	defer rows.Close()
	var out []Ask
	for rows.Next() {
		a, err := scanAsk(rows)
		if err != nil {
			return nil, s.explain("listing the pending asks", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain("listing the pending asks", err)
	}
	return out, nil
}

// AddAnswer records a human's answer to ask id. It refuses an ask that
// is not recorded, one the gateway has settled, and a second answer:
// the check and the write are one transaction, so of two approvers
// answering at once one is refused.
func (s *Store) AddAnswer(id string, ans Answer) error {
	if ans.Answer != "approve" && ans.Answer != "decline" {
		return refuse("answer %q is not approve or decline", ans.Answer)
	}
	defer s.answered.Add(1)
	return s.write("recording the answer to "+id, func(tx runner) error {
		a, found, err := getAsk(tx, id)
		switch {
		case err != nil:
			return err
		case !found:
			return refuse("no pending approval %q", id)
		case !a.Settled.IsZero():
			return refuse("approval %q is already answered", id)
		}
		var n int
		if err := tx.QueryRow(`SELECT count(*) FROM answers WHERE ask_id = ?`, id).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return refuse("approval %q is already answered", id)
		}
		_, err = tx.Exec(`INSERT INTO answers (ask_id, answer, approver, key, sig, signed_at, given_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			id, ans.Answer, ans.Approver, ans.Key, ans.Sig, ans.Signed, formatTime(ans.Given))
		if err == nil && s.pg != nil {
			// Delivered to every listening replica when this commits.
			_, err = tx.Exec("SELECT pg_notify(?, ?)", answersChannel, id)
		}
		return err
	})
}

// GetAnswer returns the answer given to ask id, if any. It is not
// checked here: the gateway checks its signature before it counts.
func (s *Store) GetAnswer(id string) (Answer, bool, error) {
	var ans Answer
	var given sql.NullString
	err := s.run().QueryRow(`SELECT answer, approver, key, sig, signed_at, given_at FROM answers WHERE ask_id = ?`, id).
		Scan(&ans.Answer, &ans.Approver, &ans.Key, &ans.Sig, &ans.Signed, &given)
	if errors.Is(err, sql.ErrNoRows) {
		return Answer{}, false, nil
	}
	if err == nil {
		ans.Given, err = parseTime(given)
	}
	if err != nil {
		return Answer{}, false, s.explain("reading the answer to "+id, err)
	}
	return ans, true, nil
}

// RejectAnswer removes an answer the gateway refused (unsigned, signed by
// a key it does not trust, over another ask), leaving the ask pending for
// a real approver.
func (s *Store) RejectAnswer(id string) error {
	return s.write("removing the refused answer to "+id, func(tx runner) error {
		_, err := tx.Exec(`DELETE FROM answers WHERE ask_id = ? AND ask_id IN (SELECT id FROM asks WHERE settled_at IS NULL)`, id)
		return err
	})
}
