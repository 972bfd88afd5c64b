package state

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// IsPostgres tells whether name selects a PostgreSQL database (a
// postgres:// or postgresql:// URL) rather than an SQLite file.
func IsPostgres(name string) bool {
	lower := strings.ToLower(name)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// pgStore is what a store on PostgreSQL keeps beside the database: the
// transaction that holds the tenant counters during a step, and the
// listener that hears of answers given through any process.
type pgStore struct {
	dsn string // as given, password and all: for the listener's connection
	// ownSchema says the URL names the schema bailiff keeps (search_path).
	ownSchema bool

	ctrMu sync.Mutex // this process's step on the counters
	ctr   *sql.Tx    // the counters' transaction, while a step holds it

	listenOnce sync.Once
	stop       context.CancelFunc
	done       chan struct{}
	listening  atomic.Bool
	heard      atomic.Int64 // notifications of answers, and reconnections
	polls      atomic.Int64
}

// answersChannel is the channel AddAnswer notifies, after its commit.
const answersChannel = "bailiff_answers"

// Timeouts that keep a dead or stalled database from holding a call
// forever: each ends the step with an error, and the call is refused.
const (
	pgConnectTimeout = "5"   // seconds, unless the URL says
	pgLockTimeout    = "10s" // waiting for another replica's step
	pgIdleInStep     = "30s" // a step left idle: its replica is stuck
	pgRetryWrites    = 10    // a serialization failure is retried
	pgListenRetry    = 500 * time.Millisecond
)

// openPostgres opens the PostgreSQL database dsn names and brings its
// schema up to date. The database (or the schema its search_path names)
// must be bailiff's or empty: another program's tables are never
// migrated into.
func openPostgres(dsn string, create bool) (*Store, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("state database: %q is not a PostgreSQL URL: %v", redactDSN(dsn), errors.Unwrap(err))
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		// pgx would read such a query its own way: what the URL means
		// must not be guessed.
		return nil, fmt.Errorf("state database %s: the URL's query does not parse: %v", redactDSN(dsn), err)
	}
	if q.Get("connect_timeout") == "" {
		q.Set("connect_timeout", pgConnectTimeout)
		u.RawQuery = q.Encode()
	}
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		return nil, fmt.Errorf("state database %s: %w", redactDSN(dsn), err)
	}
	// A step on the counters holds one connection for its length; the
	// others serve asks, answers and grants meanwhile.
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(4)
	db.SetConnMaxIdleTime(time.Minute)
	s := &Store{db: db, path: redactDSN(dsn), pg: &pgStore{dsn: u.String(), ownSchema: q.Has("search_path")}}
	if !create {
		if v, err := s.pgVersion(s.run()); err != nil || v == 0 {
			db.Close()
			if err == nil {
				err = fmt.Errorf("%w: %s holds no bailiff state yet", ErrNoState, s.path)
			}
			return nil, err
		}
	}
	if err := s.migratePG(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// redactDSN is dsn as it may be shown: without its password, nor any
// parameter that may hold one (sslpassword), nor a query that does not
// parse (what it holds cannot be told apart).
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://…"
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		u.RawQuery = "…"
		return u.Redacted()
	}
	secret := false
	for k := range q {
		if secretParam(k) {
			q.Set(k, "xxxxx")
			secret = true
		}
	}
	if secret {
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// secretParam tells a URL parameter that may hold a password
// (password, sslpassword).
func secretParam(k string) bool { return strings.Contains(strings.ToLower(k), "password") }

// HasPassword tells whether a PostgreSQL URL holds a password, which
// whoever reads the file or the process list it is in reads too.
func HasPassword(dsn string) bool {
	u, err := url.Parse(dsn)
	if err != nil {
		return false
	}
	if _, ok := u.User.Password(); ok {
		return true
	}
	q, _ := url.ParseQuery(u.RawQuery)
	for k := range q {
		if secretParam(k) {
			return true
		}
	}
	return false
}

// pgSchema is migration m as PostgreSQL reads it: every INTEGER a
// 64-bit one (SQLite's are), and no STRICT (PostgreSQL's columns are).
// The migrations themselves stay as released.
func pgSchema(m string) string {
	m = pgInteger.ReplaceAllString(m, "BIGINT")
	return pgStrict.ReplaceAllString(m, ")")
}

var (
	pgInteger = regexp.MustCompile(`\bINTEGER\b`)
	pgStrict  = regexp.MustCompile(`\)\s*STRICT\b`)
)

// pgApplication marks a PostgreSQL database (or schema) as bailiff's.
const pgApplication = "bailiff state"

// migratePG migrates under an advisory lock, so replicas starting at
// once migrate the database once; each migration is one transaction.
func (s *Store) migratePG() error {
	for {
		v, err := s.pgVersion(s.run())
		if err != nil || v == Version {
			return err
		}
		err = s.writeOnce(fmt.Sprintf("migrating to schema version %d", v+1), sql.LevelReadCommitted, func(tx runner) error {
			if _, err := tx.Exec(fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", applicationID)); err != nil {
				return err
			}
			now, err := s.pgVersion(tx)
			if err != nil || now != v {
				return err
			}
			if v == 0 {
				if _, err := tx.Exec(`CREATE TABLE bailiff_schema (
					id          BIGINT PRIMARY KEY CHECK (id = 1),
					application TEXT NOT NULL,
					version     BIGINT NOT NULL);
				INSERT INTO bailiff_schema VALUES (1, '` + pgApplication + `', 0)`); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(pgSchema(migrations[v])); err != nil {
				return err
			}
			_, err = tx.Exec("UPDATE bailiff_schema SET version = ? WHERE id = 1", v+1)
			return err
		})
		if err != nil {
			return err
		}
	}
}

// pgVersion is the schema version, refusing a newer one and a database
// (schema) that holds tables but not bailiff's mark.
func (s *Store) pgVersion(q runner) (int, error) {
	// Read from the catalogs, not by resolving the name: a replica that
	// waited on the migration lock sees there what the other committed.
	var marked, objects int
	if err := q.QueryRow(`SELECT
		(SELECT count(*) FROM pg_class WHERE relnamespace = to_regnamespace(current_schema()) AND relname = 'bailiff_schema'),
		(SELECT count(*) FROM pg_class WHERE relnamespace = to_regnamespace(current_schema()))
		+ (SELECT count(*) FROM pg_proc WHERE pronamespace = to_regnamespace(current_schema()))
		+ (SELECT count(*) FROM pg_type WHERE typnamespace = to_regnamespace(current_schema()) AND typrelid = 0 AND typcategory <> 'A')`).Scan(&marked, &objects); err != nil {
		return 0, s.explain("reading the schema version", err)
	}
	if marked == 0 {
		if objects > 0 {
			return 0, fmt.Errorf("state database %s holds %d objects (tables, views, sequences, functions or types) but not bailiff's state; give bailiff a database of its own (or a schema: search_path=NAME in the URL)", s.path, objects)
		}
		if !s.pg.ownSchema {
			// Named by its database alone, the database is bailiff's
			// only if no other program keeps anything in it.
			var others int
			if err := q.QueryRow(`SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
				WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%'`).Scan(&others); err != nil {
				return 0, s.explain("reading the schema version", err)
			}
			if others > 0 {
				return 0, fmt.Errorf("state database %s holds %d objects of other schemas, so it is another program's too; give bailiff a database of its own (or a schema: search_path=NAME in the URL)", s.path, others)
			}
		}
		return 0, nil
	}
	var app string
	var v int
	if err := q.QueryRow("SELECT application, version FROM bailiff_schema WHERE id = 1").Scan(&app, &v); err != nil {
		return 0, s.explain("reading the schema version", err)
	}
	switch {
	case app != pgApplication:
		return 0, fmt.Errorf("state database %s is marked %q, not bailiff's state", s.path, app)
	case v > Version:
		return 0, fmt.Errorf("%w: %s has schema version %d, and this bailiff knows versions up to %d; run the bailiff that wrote it (a database is never migrated down)", ErrNewer, s.path, v, Version)
	}
	return v, nil
}

// ErrNoState is a database OpenExisting found no state in.
var ErrNoState = errors.New("no state database")

// OpenExisting opens a PostgreSQL state database that a gateway has
// already set up, refusing an empty one rather than making it bailiff's:
// a mistyped URL must not read as "nothing is waiting". (An SQLite file
// is checked by its caller, which can name the file.)
func OpenExisting(dsn string) (*Store, error) {
	if !IsPostgres(dsn) {
		return Open(dsn)
	}
	return openPostgres(dsn, false)
}

// ErrUnavailable is a database that cannot be reached: nothing is
// decided on a guess of what it holds.
var ErrUnavailable = errors.New("the state database cannot be reached")

// explainPG is explain for PostgreSQL's errors.
func (s *Store) explainPG(doing string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "53100":
			return fmt.Errorf("%w: %s while %s: %v; nothing was changed", ErrFull, s.path, doing, err)
		case pe.Code == "25006" || pe.Code == "42501":
			return fmt.Errorf("%w: %s while %s: %v; bailiff's role must be able to create and write its tables", ErrReadOnly, s.path, doing, err)
		case pe.Code == "XX001" || pe.Code == "XX002":
			return fmt.Errorf("%w: %s while %s: %v", ErrCorrupt, s.path, doing, err)
		case strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P"):
			return fmt.Errorf("%w: %s while %s: %v", ErrUnavailable, s.path, doing, err)
		}
		return fmt.Errorf("state database %s: %s: %w", s.path, doing, err)
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, context.DeadlineExceeded) || pgconn.SafeToRetry(err) || strings.Contains(err.Error(), "conn closed") {
		return fmt.Errorf("%w: %s while %s: %v", ErrUnavailable, s.path, doing, err)
	}
	return fmt.Errorf("state database %s: %s: %w", s.path, doing, err)
}

// retryable is a write PostgreSQL refused only because another ran at
// once (a serialization failure, a deadlock, a key another inserted
// first): run again, it reads what the other wrote.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01" || pe.Code == "23505")
}

// lockCountersPG holds the counters for one step: a transaction that
// locks their clock row, so every replica's steps run one at a time.
// The step's reads and its save run in it; if the replica dies or its
// connection drops, the transaction ends and nothing it did is kept.
func (s *Store) lockCountersPG() (func(), error) {
	p := s.pg
	p.ctrMu.Lock()
	fail := func(err error) (func(), error) {
		p.ctrMu.Unlock()
		return nil, s.explain("locking the tenant counters", err)
	}
	tx, err := s.db.BeginTx(context.Background(), nil)
	if err != nil {
		return fail(err)
	}
	var v int64
	for _, q := range []string{"SET LOCAL lock_timeout = '" + pgLockTimeout + "'",
		"SET LOCAL idle_in_transaction_session_timeout = '" + pgIdleInStep + "'"} {
		if _, err = tx.Exec(q); err != nil {
			break
		}
	}
	if err == nil {
		err = tx.QueryRow("SELECT version FROM counters_clock WHERE id = 1 FOR UPDATE").Scan(&v)
	}
	if err != nil {
		tx.Rollback()
		return fail(err)
	}
	p.ctr = tx
	return func() {
		if p.ctr != nil {
			p.ctr.Rollback()
			p.ctr = nil
		}
		p.ctrMu.Unlock()
	}, nil
}

// saveCountersPG runs a step's save in the transaction that holds the
// counters, and commits it: the change is kept only if the lock was.
func (s *Store) saveCountersPG(save func(tx runner) error) error {
	p := s.pg
	tx := p.ctr
	if tx == nil {
		return s.write("saving the tenant counters", save)
	}
	p.ctr = nil
	if err := save(runner{tx, true}); err != nil {
		tx.Rollback()
		return s.explain("saving the tenant counters", err)
	}
	if err := tx.Commit(); err != nil {
		return s.explain("saving the tenant counters", err)
	}
	return nil
}
