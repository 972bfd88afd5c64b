// Package pgtest gives tests a PostgreSQL database of their own: a fresh
// schema in the server $BAILIFF_TEST_POSTGRES names (`.ci/postgres start`
// runs a throwaway one), dropped when the test ends. Without that
// variable the tests that need it skip and say so; with
// $BAILIFF_POSTGRES_REQUIRED set (as .ci/run sets it) they fail instead,
// so CI never passes on a skipped database.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is the PostgreSQL server's URL, skipping (or, in CI, failing)
// t when there is none.
func Server(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("BAILIFF_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("BAILIFF_POSTGRES_REQUIRED") != "" {
			t.Fatal("BAILIFF_POSTGRES_REQUIRED is set but BAILIFF_TEST_POSTGRES is not: .ci/postgres did not start a server")
		}
		t.Skip("no PostgreSQL server: set BAILIFF_TEST_POSTGRES (eval \"$(.ci/postgres start)\") to run this test")
	}
	return dsn
}

// Schema is the URL of a new, empty schema in the server, as a store
// opens it (search_path names the schema), dropped when t ends.
func Schema(t testing.TB) string {
	t.Helper()
	dsn, drop, err := NewSchema(Server(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return dsn
}

// NewSchema makes a new, empty schema in server and returns its URL and
// what drops it.
func NewSchema(server string) (dsn string, drop func(), err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return "", nil, fmt.Errorf("PostgreSQL at %s: %v", server, err)
	}
	defer conn.Close(context.Background())
	var b [6]byte
	rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", nil, err
	}
	drop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, server); err == nil {
			conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE")
			conn.Close(ctx)
		}
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}
