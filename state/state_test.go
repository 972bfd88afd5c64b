package state_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bailiff/internal/pgtest"
	"bailiff/state"
)

var t0 = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)

func open(t *testing.T, path string) *state.Store {
	t.Helper()
	s, err := state.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// backends runs test on each kind of state database: an SQLite file, and
// a PostgreSQL schema (skipped, and saying so, where no server is given;
// see pgtest). where names the database as --state would.
func backends(t *testing.T, test func(t *testing.T, where string)) {
	t.Run("sqlite", func(t *testing.T) { test(t, filepath.Join(t.TempDir(), "state.db")) })
	t.Run("postgres", func(t *testing.T) { test(t, pgtest.Schema(t)) })
}

func ask(id string) state.Ask {
	return state.Ask{ID: id, Kind: "call", Log: "/var/log/a.jsonl", Session: "s1", Server: "mail", Tool: "send",
		Call: "c" + id, Digest: "sha256:" + id, Principal: "ana", Args: `{"to":"x@example.com"}`, Reason: "sends mail", Asked: t0}
}

func answer(a string) state.Answer {
	return state.Answer{Answer: a, Approver: "lee", Key: "lee+abc+KEY", Sig: "SIG", Signed: "2026-12-06T10:01:00Z", Given: t0.Add(time.Minute)}
}

// TestAskAnswerGrantLifecycle: an ask is pending until answered; a second
// answer is refused; a refused answer leaves it pending; settling takes it
// out of the list and records the grant, which is used once; and all of
// it is there again after the store is closed and opened.
func TestAskAnswerGrantLifecycle(t *testing.T) { backends(t, testAskAnswerGrantLifecycle) }

func testAskAnswerGrantLifecycle(t *testing.T, path string) {
	s := open(t, path)
	for _, id := range []string{"s1-b", "s1-a"} {
		if err := s.AddAsk(ask(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddAsk(ask("s1-a")); err != nil {
		t.Fatalf("the same ask again: %v", err)
	}
	other := ask("s1-a")
	other.Digest = "sha256:other"
	if err := s.AddAsk(other); err == nil {
		t.Fatal("another call under a recorded ask's id was accepted")
	}
	if err := s.AddAsk(state.Ask{ID: "x", Kind: "calls"}); err == nil {
		t.Fatal("an ask of an unknown kind was accepted")
	}
	pendingIDs(t, s, "", "s1-a", "s1-b")
	pendingIDs(t, s, "/other.jsonl")

	if err := s.AddAnswer("s1-a", answer("approve")); err != nil {
		t.Fatal(err)
	}
	if err := s.AddAnswer("s1-a", answer("decline")); err == nil {
		t.Fatal("a second answer was accepted")
	}
	if err := s.AddAnswer("nope", answer("approve")); err == nil {
		t.Fatal("an answer to no ask was accepted")
	}
	if err := s.AddAnswer("s1-b", answer("maybe")); err == nil {
		t.Fatal("an answer that is neither approve nor decline was accepted")
	}
	pendingIDs(t, s, "", "s1-b")
	got, ok, err := s.GetAnswer("s1-a")
	if err != nil || !ok || got.Answer != "approve" || got.Key != "lee+abc+KEY" || !got.Given.Equal(t0.Add(time.Minute)) {
		t.Fatalf("GetAnswer = %+v, %v, %v", got, ok, err)
	}

	if err := s.RejectAnswer("s1-a"); err != nil {
		t.Fatal(err)
	}
	pendingIDs(t, s, "", "s1-a", "s1-b")
	if err := s.AddAnswer("s1-a", answer("approve")); err != nil {
		t.Fatalf("a real answer after a refused one: %v", err)
	}
	g := &state.Grant{Server: "mail", Tool: "send", Digest: "sha256:s1-a", Principal: "ana", Approver: "lee", Approve: true,
		Expires: t0.Add(16 * time.Minute), Granted: t0.Add(2 * time.Minute)}
	if err := s.Settle("s1-a", t0.Add(2*time.Minute), g); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle("s1-a", t0.Add(3*time.Minute), g); err == nil {
		t.Fatal("an ask was settled twice")
	}
	if err := s.AddAnswer("s1-a", answer("decline")); err == nil {
		t.Fatal("a settled ask took an answer")
	}
	if err := s.RejectAnswer("s1-a"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.GetAnswer("s1-a"); !ok {
		t.Fatal("rejecting removed the answer of a settled ask")
	}
	pendingIDs(t, s, "", "s1-b")

	s.Close()
	s = open(t, path)
	pendingIDs(t, s, "", "s1-b")
	if err := s.UseGrant("s1-a", "s2/c9", t0.Add(5*time.Minute)); err != nil {
		t.Fatalf("first use after a reopen: %v", err)
	}
	err = s.UseGrant("s1-a", "s2/c10", t0.Add(6*time.Minute))
	if !errors.Is(err, state.ErrUsed) {
		t.Fatalf("second use: %v, want ErrUsed", err)
	}
	gr, ok, err := s.GetGrant("s1-a")
	if err != nil || !ok || gr.UsedBy != "s2/c9" || !gr.Used.Equal(t0.Add(5*time.Minute)) || !gr.Expires.Equal(g.Expires) || !gr.Approve {
		t.Fatalf("GetGrant = %+v, %v, %v", gr, ok, err)
	}
	if err := s.UseGrant("s1-zz", "s2/c1", t0); err == nil || errors.Is(err, state.ErrUsed) {
		t.Fatalf("using no grant: %v", err)
	}
}

func pendingIDs(t *testing.T, s *state.Store, log string, want ...string) {
	t.Helper()
	list, err := s.Pending(log)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range list {
		got = append(got, a.ID)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pending = %v, want %v", got, want)
	}
}

// TestSaveBudgets: a session's counts per tool, as the gateway saves
// them when the session ends; saved again they replace the last, never
// below zero, and kept across a reopen.
func TestSaveBudgets(t *testing.T) { backends(t, testSaveBudgets) }

func testSaveBudgets(t *testing.T, path string) {
	s := open(t, path)
	if err := s.SaveBudgets("s1", []state.Budget{{"mail", "send", 2}, {"mail", "read", 1}, {"mail", "list", -1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveBudgets("s1", []state.Budget{{"mail", "send", 3}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, path)
	for _, c := range []struct {
		session, tool string
		want          int
	}{{"s1", "send", 3}, {"s1", "read", 1}, {"s1", "list", 0}, {"s2", "send", 0}} {
		if n, err := s.Spent(c.session, "mail", c.tool); err != nil || n != c.want {
			t.Errorf("Spent(%s, %s) = %d, %v; want %d", c.session, c.tool, n, err, c.want)
		}
	}
}

// TestPrivateFile: a new database, and its WAL, are the user's alone: it
// holds the arguments of the calls waiting for approval.
func TestPrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "state.db")
	s := open(t, path)
	if err := s.AddAsk(ask("a")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
}

// TestAnswersVersion: the version moves when an answer is recorded,
// through this store or another on the same database, and not
// otherwise; a gateway skips looking for approvals of earlier sessions
// while it stands. On PostgreSQL the other store's answer arrives as a
// notification, so it is waited for (never longer than settle).
func TestAnswersVersion(t *testing.T) { backends(t, testAnswersVersion) }

func testAnswersVersion(t *testing.T, path string) {
	gw, approver := open(t, path), open(t, path)
	for _, id := range []string{"a", "b", "c"} {
		if err := gw.AddAsk(ask(id)); err != nil {
			t.Fatal(err)
		}
	}
	v0 := steadyVersion(t, gw)
	if v := version(t, gw); v != v0 {
		t.Fatalf("the version moved with nothing done: %s, %s", v0, v)
	}
	if err := approver.AddAnswer("a", answer("approve")); err != nil {
		t.Fatal(err)
	}
	v1 := movedFrom(t, gw, v0, "an answer through another store")
	if err := gw.AddAnswer("b", answer("approve")); err != nil {
		t.Fatal(err)
	}
	movedFrom(t, gw, v1, "an answer through this store")
}

const settle = 10 * time.Second

func version(t *testing.T, s *state.Store) string {
	t.Helper()
	v, err := s.AnswersVersion()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// steadyVersion waits for the version to stand still: on PostgreSQL it
// moves at every read until the listener is connected (polling).
func steadyVersion(t *testing.T, s *state.Store) string {
	t.Helper()
	for end := time.Now().Add(settle); ; time.Sleep(10 * time.Millisecond) {
		if a, b := version(t, s), version(t, s); a == b {
			return b
		}
		if time.Now().After(end) {
			t.Fatalf("the answers version never stood still in %v: no listener", settle)
		}
	}
}

// movedFrom waits for the version to move from v, and for it to stand.
func movedFrom(t *testing.T, s *state.Store, v, what string) string {
	t.Helper()
	for end := time.Now().Add(settle); version(t, s) == v; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s did not move the version in %v", what, settle)
		}
	}
	return steadyVersion(t, s)
}

// TestCarryable: the approvals a later session of the same log and
// principal may take up are the approved, unused ones of other sessions;
// a row someone edited into nonsense is skipped and named, and the rest
// are still listed.
func TestCarryable(t *testing.T) { backends(t, testCarryable) }

func testCarryable(t *testing.T, path string) {
	s := open(t, path)
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		if err := s.AddAsk(ask(id)); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.AddAnswer("a", answer("approve")))
	must(s.AddAnswer("b", answer("decline")))
	must(s.AddAnswer("c", answer("approve")))
	must(s.Settle("c", t0, &state.Grant{Approve: true, Expires: t0.Add(time.Hour), Granted: t0}))
	must(s.UseGrant("c", "s2/c1", t0))
	must(s.AddAnswer("d", answer("approve")))
	must(s.AddAnswer("e", answer("approve")))
	must(s.Exec("UPDATE asks SET asked_at = 'garbage' WHERE id = 'e'"))
	list, err := s.Carryable("/var/log/a.jsonl", "ana", "s2")
	var got []string
	for _, c := range list {
		got = append(got, c.Ask.ID)
	}
	if fmt.Sprint(got) != "[a d]" || err == nil || !strings.Contains(err.Error(), `ask "e"`) {
		t.Fatalf("Carryable = %v, %v; want [a d] and an error naming e", got, err)
	}
	for _, other := range [][3]string{{"/var/log/b.jsonl", "ana", "s2"}, {"/var/log/a.jsonl", "bob", "s2"}, {"/var/log/a.jsonl", "ana", "s1"}} {
		if list, _ := s.Carryable(other[0], other[1], other[2]); len(list) != 0 {
			t.Errorf("Carryable%v = %d approvals, want none", other, len(list))
		}
	}
}
