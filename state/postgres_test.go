package state_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"bailiff/internal/pgtest"
	"bailiff/state"
)

// TestCountersSerialized: four stores on one database (four replicas),
// each taking 25 steps that read the shared counter, add one and save:
// every step sees the one before it, so none is lost and the clock
// counts each step once.
func TestCountersSerialized(t *testing.T) { backends(t, testCountersSerialized) }

func testCountersSerialized(t *testing.T, path string) {
	const replicas, steps = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, replicas)
	for r := range replicas {
		s := open(t, path)
		wg.Go(func() {
			var version, used int64
			for range steps {
				unlock, err := s.LockCounters()
				if err != nil {
					errs <- err
					return
				}
				rows, _, _, err := s.CountersSince(version)
				if err == nil {
					for _, c := range rows {
						used = c.Used
					}
					used++
					version, err = s.SaveCounters(nil, []state.Counter{{Tenant: "acme", Counter: "cost 24h", WindowStart: "w", Used: used}}, t0.Add(time.Duration(r)))
				}
				unlock()
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rows, version, _, err := open(t, path).CountersSince(0)
	if err != nil || len(rows) != 1 || rows[0].Used != replicas*steps || version != replicas*steps {
		t.Fatalf("after %d steps: rows %+v, version %d, %v", replicas*steps, rows, version, err)
	}
}

// TestCountersUnsavedStepKeepsNothing: a step that takes the lock and
// lets go without saving (its replica failed mid-step) leaves the
// counters as the last save left them, and lets go of the lock: another
// store's step runs next, and does not wait for ever.
func TestCountersUnsavedStepKeepsNothing(t *testing.T) { backends(t, testCountersUnsaved) }

func testCountersUnsaved(t *testing.T, path string) {
	s, other := open(t, path), open(t, path)
	unlock, err := s.LockCounters()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveCounters(nil, []state.Counter{{Tenant: "acme", Counter: "cost 24h", WindowStart: "w", Used: 3}}, t0); err != nil {
		t.Fatal(err)
	}
	unlock()
	unlock, err = s.LockCounters()
	if err != nil {
		t.Fatal(err)
	}
	unlock() // no save
	done := make(chan error, 1)
	go func() {
		unlock, err := other.LockCounters()
		if err == nil {
			var rows []state.Counter
			var version int64
			rows, version, _, err = other.CountersSince(0)
			if err == nil && (len(rows) != 1 || rows[0].Used != 3 || version != 1) {
				err = fmt.Errorf("rows %+v, version %d: want the one saved, at version 1", rows, version)
			}
			unlock()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(settle):
		t.Fatalf("a step that let go without saving still holds the lock after %v", settle)
	}
}

func pgExec(t *testing.T, dsn, q string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), q); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresNotOurs: a schema holding another program's tables is
// refused, and left as it was; so is one marked as bailiff's by a newer
// version.
func TestPostgresNotOurs(t *testing.T) {
	dsn := pgtest.Schema(t)
	pgExec(t, dsn, "CREATE TABLE orders (id int)")
	_, err := state.Open(dsn)
	if err == nil || !strings.Contains(err.Error(), "not bailiff's state") {
		t.Fatalf("another program's schema: %v", err)
	}
	pgExec(t, dsn, "SELECT 1 FROM orders") // still there
	var n int
	conn, _ := pgx.Connect(context.Background(), dsn)
	defer conn.Close(context.Background())
	conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").Scan(&n)
	if n != 1 {
		t.Fatalf("the refused schema now holds %d tables", n)
	}

	// A view, a function: another program's too.
	for _, q := range []string{"CREATE VIEW v AS SELECT 1 AS one", "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'", "CREATE SEQUENCE q"} {
		dsn := pgtest.Schema(t)
		pgExec(t, dsn, q)
		if _, err := state.Open(dsn); err == nil || !strings.Contains(err.Error(), "not bailiff's state") {
			t.Errorf("a schema holding only %q: %v", q, err)
		}
	}
	// A database named alone (no search_path) whose other schemas hold
	// another program's tables is refused too, not migrated into.
	server := pgtest.Server(t)
	db := fmt.Sprintf("other_%d", time.Now().UnixNano())
	pgExec(t, server, "CREATE DATABASE "+db)
	t.Cleanup(func() { pgExec(t, server, "DROP DATABASE "+db+" WITH (FORCE)") })
	dbURL := strings.Replace(server, "/postgres?", "/"+db+"?", 1)
	pgExec(t, dbURL, "CREATE SCHEMA app; CREATE TABLE app.customers (id int)")
	if _, err := state.Open(dbURL); err == nil || !strings.Contains(err.Error(), "objects of other schemas") {
		t.Fatalf("a database holding app.customers: %v", err)
	}

	newer := pgtest.Schema(t)
	open(t, newer).Close()
	pgExec(t, newer, fmt.Sprintf("UPDATE bailiff_schema SET version = %d", state.Version+1))
	if _, err := state.Open(newer); !errors.Is(err, state.ErrNewer) {
		t.Fatalf("a newer schema: %v, want ErrNewer", err)
	}
}

// TestPostgresMigratesOnce: replicas starting at once on an empty
// schema all open it, and it is migrated once.
func TestPostgresMigratesOnce(t *testing.T) {
	dsn := pgtest.Schema(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			s, err := state.Open(dsn)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s := open(t, dsn)
	if err := s.AddAsk(ask("a")); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresDownIsClear: a server that cannot be reached is refused
// with ErrUnavailable, and the password in the URL is never shown.
func TestPostgresDownIsClear(t *testing.T) {
	pgtest.Server(t)
	_, err := state.Open("postgres://bailiff:s3cret-pw@127.0.0.1:1/state?sslmode=disable&connect_timeout=2")
	if !errors.Is(err, state.ErrUnavailable) || strings.Contains(err.Error(), "s3cret-pw") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("unreachable server: %v", err)
	}
	for _, dsn := range []string{
		"postgres://bailiff@127.0.0.1:1/state?sslmode=disable&connect_timeout=2&password=s3cret-pw",
		"postgres://bailiff@127.0.0.1:1/state?sslmode=disable&connect_timeout=2&sslpassword=s3cret-pw",
		"postgres://bailiff@127.0.0.1:1/state?connect_timeout=2;password=s3cret-pw", // a query Go does not parse
	} {
		_, err = state.Open(dsn)
		if err == nil || strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("%s: %v", strings.ReplaceAll(dsn, "s3cret-pw", "…"), err)
		}
	}
	if !state.HasPassword("postgres://a:b@h/d") || !state.HasPassword("postgres://a@h/d?password=b") || state.HasPassword("postgres://a@h/d") {
		t.Error("HasPassword does not tell")
	}
}

// TestPostgresListenerFallsBack: when the listener's connection is cut,
// the answers version moves at every read (the gateway polls) until it
// is back, and an answer given meanwhile is still seen.
func TestPostgresListenerFallsBack(t *testing.T) {
	dsn := pgtest.Schema(t)
	gw, approver := open(t, dsn), open(t, dsn)
	if err := gw.AddAsk(ask("a")); err != nil {
		t.Fatal(err)
	}
	v0 := steadyVersion(t, gw)
	pgExec(t, dsn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN "+"bailiff_answers'")
	polled := false
	for end := time.Now().Add(settle); time.Now().Before(end) && !polled; time.Sleep(5 * time.Millisecond) {
		a := version(t, gw)
		polled = a != version(t, gw)
	}
	if !polled {
		t.Fatal("with its listener cut, the version never moved at every read")
	}
	if err := approver.AddAnswer("a", answer("approve")); err != nil {
		t.Fatal(err)
	}
	if v := steadyVersion(t, gw); v == v0 {
		t.Fatal("after the listener came back, the version was where it stood before the answer")
	}
}
