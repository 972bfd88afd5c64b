// Package state is the gateway's operating state: asks waiting for a
// human, the answers given to them, the grants made from the answers and
// whether each was used, and the counters of budgets. It lives in one
// SQLite file (modernc.org/sqlite: pure Go, no cgo) in WAL mode, written
// with synchronous=FULL, so a change the store has returned from is on
// disk: a kill -9 after it loses nothing.
//
// The state is not the evidence. The hash-chained audit log is: every
// grant used and every ask settled is written there too, and verify
// recomputes every verdict from the log alone. The store exists so that
// what a human decided survives a restart, and so that a grant is used
// at most once even when two calls race for it.
package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"bailiff/internal/fault"
)

// Store is an open state database. Its methods are safe for concurrent
// use, and for use beside other processes holding the same file (the
// gateway and `bailiff approve`): every write is one immediate
// transaction, so writers queue on SQLite's lock rather than interleave.
type Store struct {
	db   *sql.DB
	path string
	// answered counts the answers recorded through this store, which
	// SQLite's data_version does not see (see AnswersVersion).
	answered atomic.Int64
	// pg is set on a PostgreSQL database (see openPostgres).
	pg *pgStore
}

// The errors a caller tells apart.
var (
	// ErrNewer is a database written by a newer bailiff: its schema is
	// not known here, and is never guessed at.
	ErrNewer = errors.New("the state database is from a newer bailiff")
	// ErrCorrupt is a file that is not a sound SQLite database.
	ErrCorrupt = errors.New("the state database is corrupt")
	// ErrReadOnly is a database this process cannot write.
	ErrReadOnly = errors.New("the state database is read-only")
	// ErrFull is a write refused for want of space.
	ErrFull = errors.New("the state database's disk is full")
)

// busyTimeout is how long a write waits for another process's
// transaction: the gateway's are short, and `approve` holds none long.
const busyTimeout = 10 * time.Second

// Open opens the state database at path, creating it (and its directory)
// if there is none, and brings its schema up to date. It refuses a file
// that is not a sound database, one from a newer bailiff, and one it
// cannot write, each with an error that names the file and what to do;
// it never rewrites or replaces a file it refused.
//
// A postgres:// or postgresql:// URL opens that PostgreSQL database
// instead, with the same schema and the same guarantees (openPostgres).
func Open(path string) (*Store, error) {
	if IsPostgres(path) {
		return openPostgres(path, true)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("state database %s: %w", abs, err)
	}
	if err := checkHeader(abs); err != nil {
		return nil, err
	}
	// Created here, private: SQLite would make it world-readable, and it
	// holds the arguments of asked calls. Its -wal and -shm files take
	// this file's permissions.
	if f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	}
	// The path goes in a URI, escaped, so no character of it is read as
	// a parameter; _txlock=immediate makes every transaction take the
	// write lock at its start, so two writers never deadlock upgrading.
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?_txlock=immediate" +
		fmt.Sprintf("&_pragma=busy_timeout(%d)", busyTimeout.Milliseconds()) +
		"&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("state database %s: %w", abs, err)
	}
	// One connection: SQLite has one writer anyway, and the pragmas and
	// the journal mode are then the store's, not one pooled connection's.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, path: abs}
	if err := s.setUp(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// sqliteMagic opens every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// checkHeader refuses a file that exists and is not a database before
// SQLite sees it: SQLite would take an empty name for a new database, but
// a file of other bytes must never be opened for writing.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("state database %s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return fmt.Errorf("state database %s is a directory: name the database file in it", path)
	}
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	if n == 0 && err == io.EOF {
		return nil // an empty file is a database not yet written
	}
	if err != nil || string(head) != sqliteMagic {
		return fmt.Errorf("%w: %s is not an SQLite database (it starts %q): is it the right file? If it is bailiff's state database, it was overwritten: move it aside to start with an empty state, or restore it from a backup", ErrCorrupt, path, head[:n])
	}
	return nil
}

// setUp checks the file is sound and bailiff's, switches it to WAL, and
// migrates it.
func (s *Store) setUp() error {
	var check string
	if err := s.run().QueryRow("PRAGMA quick_check").Scan(&check); err != nil {
		return s.explain("checking", err)
	}
	if check != "ok" {
		check = strings.Join(strings.Fields(check), " ")
		return fmt.Errorf("%w: %s fails SQLite's check (%s); move it aside to start with an empty state, or restore it from a backup", ErrCorrupt, s.path, check)
	}
	// Whose and which version, before anything is written: a file that
	// is another program's, or a newer bailiff's, is left as it was.
	if _, err := s.version(s.run()); err != nil {
		return err
	}
	var mode string
	if err := s.run().QueryRow("PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return s.explain("opening", err)
	}
	if mode != "wal" {
		return fmt.Errorf("state database %s: journal mode is %q, not wal", s.path, mode)
	}
	return s.migrate()
}

// Path is the database file's absolute path, or the PostgreSQL URL
// without its password.
func (s *Store) Path() string { return s.path }

// Postgres tells whether the store is a PostgreSQL database.
func (s *Store) Postgres() bool { return s.pg != nil }

// Close closes the database.
func (s *Store) Close() error {
	if s.pg != nil {
		s.pg.close()
	}
	return s.db.Close()
}

// explain wraps a database error with what was being done and the file,
// and with the sentinel that tells a caller what kind of failure it was.
func (s *Store) explain(doing string, err error) error {
	if s.pg != nil {
		return s.explainPG(doing, err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%w: %s while %s: %v; move it aside to start with an empty state, or restore it from a backup", ErrCorrupt, s.path, doing, err)
		case sqlite3.SQLITE_READONLY:
			return fmt.Errorf("%w: %s while %s: %v; bailiff must be able to write it (and its directory, for the -wal and -shm files)", ErrReadOnly, s.path, doing, err)
		case sqlite3.SQLITE_FULL:
			return fmt.Errorf("%w: %s while %s: %v; nothing was changed", ErrFull, s.path, doing, err)
		}
	}
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("%w: %s while %s: %v; nothing was changed", ErrFull, s.path, doing, err)
	}
	return fmt.Errorf("state database %s: %s: %w", s.path, doing, err)
}

// write runs fn in one transaction, committed only if fn returns nil: a
// change is all of it or none of it. On SQLite the transaction is
// immediate (it takes the one write lock at its start); on PostgreSQL it
// is serializable, and retried when another write ran at once, so the
// two give every write the same answer.
func (s *Store) write(doing string, fn func(tx runner) error) error {
	if err := fault.Err(fault.StateWrite, doing); err != nil {
		return s.explain(doing, err)
	}
	if s.pg == nil {
		return s.writeOnce(doing, sql.LevelDefault, fn)
	}
	for try := 1; ; try++ {
		err := s.writeOnce(doing, sql.LevelSerializable, fn)
		if try == pgRetryWrites || !retryable(err) {
			return err
		}
	}
}

func (s *Store) writeOnce(doing string, level sql.IsolationLevel, fn func(tx runner) error) error {
	tx, err := s.db.BeginTx(context.Background(), &sql.TxOptions{Isolation: level})
	if err != nil {
		return s.explain(doing, err)
	}
	if err := fn(runner{tx, s.pg != nil}); err != nil {
		tx.Rollback()
		var refused *Refusal
		if errors.As(err, &refused) {
			return err
		}
		return s.explain(doing, err)
	}
	if err := tx.Commit(); err != nil {
		return s.explain(doing, err)
	}
	return nil
}

// Refusal is a write the state's rules refuse (an answer to an ask that
// has one, a grant already used): not a failure of the database.
type Refusal struct {
	Why  string
	used bool
}

func (r *Refusal) Error() string { return r.Why }

// Is lets errors.Is tell a grant already used from other refusals.
func (r *Refusal) Is(target error) bool { return target == ErrUsed && r.used }

func refuse(format string, a ...any) error { return &Refusal{Why: fmt.Sprintf(format, a...)} }
