package state

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// runner runs the store's queries on the database or on a transaction.
// Every query is written once, with SQLite's ? placeholders; on
// PostgreSQL they are numbered ($1, $2, …) as it wants them. No query
// holds a ? in a literal, so the rewrite needs no SQL parser.
type runner struct {
	q  sqlRunner
	pg bool
}

type sqlRunner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (r runner) bind(query string) string {
	if !r.pg || !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (r runner) Exec(query string, args ...any) (sql.Result, error) {
	return r.q.ExecContext(context.Background(), r.bind(query), args...)
}

func (r runner) Query(query string, args ...any) (*sql.Rows, error) {
	return r.q.QueryContext(context.Background(), r.bind(query), args...)
}

func (r runner) QueryRow(query string, args ...any) *sql.Row {
	return r.q.QueryRowContext(context.Background(), r.bind(query), args...)
}

// run is the store's database as a runner, outside any transaction.
func (s *Store) run() runner { return runner{s.db, s.pg != nil} }

// boolInt is a flag as the schema's INTEGER 0 or 1 column holds it: both
// databases take a number there, where PostgreSQL would refuse a bool.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
