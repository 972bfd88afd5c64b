package state

import (
	"database/sql"
	"fmt"
	"time"
)

// applicationID marks a database as bailiff's state ("baif"), so another
// program's SQLite file given by mistake is refused, not migrated into.
const applicationID = 0x62616966

// migrations are the schema's versions: migrations[i] takes a database
// from version i to i+1. One is only ever appended; a released one is
// never edited, since databases in the field were built by it.
var migrations = []string{
	// 1: asks, answers, grants, session budgets, and the tenant counters
	// the tenant budgets will use.
	`CREATE TABLE asks (
		id         TEXT PRIMARY KEY,
		kind       TEXT NOT NULL CHECK (kind IN ('call', 'definition')),
		log        TEXT NOT NULL,  -- the audit log that records the ask
		session    TEXT NOT NULL,
		server     TEXT NOT NULL,
		tool       TEXT NOT NULL,
		call       TEXT NOT NULL,  -- the call's id; '' for a definition
		digest     TEXT NOT NULL,  -- the arguments', or the new definition's
		principal  TEXT NOT NULL,  -- who the agent acts for
		args       TEXT NOT NULL,  -- JSON, as the gateway wrote it: a notice, the log is shown
		reason     TEXT NOT NULL,
		asked_at   TEXT NOT NULL,
		expires_at TEXT,           -- NULL: answerable until the gateway settles it
		settled_at TEXT            -- when the gateway took its answer into the log
	) STRICT;
	CREATE TABLE answers (
		ask_id    TEXT PRIMARY KEY REFERENCES asks (id),
		answer    TEXT NOT NULL CHECK (answer IN ('approve', 'decline')),
		approver  TEXT NOT NULL,   -- the signing key's name, for the reader
		key       TEXT NOT NULL,   -- the signature as audit.Signature holds it
		sig       TEXT NOT NULL,
		signed_at TEXT NOT NULL,
		given_at  TEXT NOT NULL
	) STRICT;
	CREATE TABLE grants (
		id         TEXT PRIMARY KEY REFERENCES asks (id),
		server     TEXT NOT NULL,
		tool       TEXT NOT NULL,
		digest     TEXT NOT NULL,
		principal  TEXT NOT NULL,
		approver   TEXT NOT NULL,
		approve    INTEGER NOT NULL CHECK (approve IN (0, 1)),
		expires_at TEXT NOT NULL,
		granted_at TEXT NOT NULL,
		used_at    TEXT,           -- NULL until a call uses it, once
		used_by    TEXT,           -- that call's session and id
		CHECK ((used_at IS NULL) = (used_by IS NULL))
	) STRICT;
	CREATE TABLE budgets (
		session TEXT NOT NULL,
		server  TEXT NOT NULL,
		tool    TEXT NOT NULL,
		used    INTEGER NOT NULL CHECK (used >= 0),
		PRIMARY KEY (session, server, tool)
	) STRICT;
	CREATE TABLE tenant_counters (
		tenant       TEXT NOT NULL,
		counter      TEXT NOT NULL,     -- what is counted: calls, a tool's calls, cost
		window_start TEXT NOT NULL,     -- '' for a budget with no window
		window_secs  INTEGER NOT NULL CHECK (window_secs >= 0),
		used         INTEGER NOT NULL CHECK (used >= 0),
		PRIMARY KEY (tenant, counter, window_start)
	) STRICT;`,
	// 2: the tenant counters as gateways share them: each row names the
	// change that last wrote it, and the clock row the last change and
	// the time of the last step taken on them.
	`ALTER TABLE tenant_counters ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;
	CREATE INDEX tenant_counters_changed ON tenant_counters (changed);
	CREATE TABLE counters_clock (
		id      INTEGER PRIMARY KEY CHECK (id = 1),
		version INTEGER NOT NULL CHECK (version >= 0),
		last    TEXT NOT NULL
	) STRICT;
	INSERT INTO counters_clock VALUES (1, 0, '');`,
}

// Version is the schema version this bailiff writes.
var Version = len(migrations)

// migrate refuses a database that is not bailiff's or is newer, and
// applies the migrations it lacks, each in a transaction of its own that
// first reads the version again: two processes opening a new file at
// once migrate it once.
func (s *Store) migrate() error {
	v, err := s.version(s.run())
	if err != nil {
		return err
	}
	for v < Version {
		err := s.write(fmt.Sprintf("migrating to schema version %d", v+1), func(tx runner) error {
			now, err := s.version(tx)
			if err != nil || now != v {
				return err
			}
			if v == 0 {
				if _, err := tx.Exec(fmt.Sprintf("PRAGMA application_id = %d", applicationID)); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(migrations[v]); err != nil {
				return err
			}
			_, err = tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", v+1))
			return err
		})
		if err != nil {
			return err
		}
		if v, err = s.version(s.run()); err != nil {
			return err
		}
	}
	return nil
}

type querier interface {
	QueryRow(query string, args ...any) *sql.Row
}

// version is the database's schema version, refusing one that is newer
// than this bailiff's or that is not a bailiff state database.
func (s *Store) version(q querier) (int, error) {
	var v, app, tables int
	if err := q.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return 0, s.explain("reading the schema version", err)
	}
	if err := q.QueryRow("PRAGMA application_id").Scan(&app); err != nil {
		return 0, s.explain("reading the schema version", err)
	}
	if err := q.QueryRow("SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
		return 0, s.explain("reading the schema version", err)
	}
	switch {
	case app != applicationID && (app != 0 || v != 0 || tables != 0):
		return 0, fmt.Errorf("state database %s is an SQLite database, but not bailiff's state (application id %#x, schema version %d); name another file with --state", s.path, app, v)
	case v > Version:
		return 0, fmt.Errorf("%w: %s has schema version %d, and this bailiff knows versions up to %d; run the bailiff that wrote it (a database is never migrated down)", ErrNewer, s.path, v, Version)
	}
	return v, nil
}

// timeFormat writes times fixed-width in UTC, so they sort as text and
// read as themselves in the sqlite3 shell.
const timeFormat = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func nullTime(t time.Time) sql.NullString {
	if t.IsZero() {
		return sql.NullString{}
	}
	return sql.NullString{String: formatTime(t), Valid: true}
}

// parseTime reads a time the store wrote; anything else is an error, not
// a zero time, since a zero expiry would read as none.
func parseTime(s sql.NullString) (time.Time, error) {
	if !s.Valid {
		return time.Time{}, nil
	}
	t, err := time.Parse(timeFormat, s.String)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q is not %s", s.String, timeFormat)
	}
	return t, nil
}
