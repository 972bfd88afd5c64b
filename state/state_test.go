package state_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
func TestAskAnswerGrantLifecycle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
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
func TestSaveBudgets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
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
// through this store or another on the same file, and not otherwise; a
// gateway skips looking for approvals of earlier sessions while it
// stands.
func TestAnswersVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	gw, approver := open(t, path), open(t, path)
	version := func() string {
		t.Helper()
		v, err := gw.AnswersVersion()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, id := range []string{"a", "b", "c"} {
		if err := gw.AddAsk(ask(id)); err != nil {
			t.Fatal(err)
		}
	}
	v0 := version()
	if v := version(); v != v0 {
		t.Fatalf("the version moved with nothing done: %s, %s", v0, v)
	}
	if err := approver.AddAnswer("a", answer("approve")); err != nil {
		t.Fatal(err)
	}
	v1 := version()
	if v1 == v0 {
		t.Fatal("an answer through another store did not move the version")
	}
	if err := gw.AddAnswer("b", answer("approve")); err != nil {
		t.Fatal(err)
	}
	if v2 := version(); v2 == v1 {
		t.Fatal("an answer through this store did not move the version")
	}
}

// TestCarryable: the approvals a later session of the same log and
// principal may take up are the approved, unused ones of other sessions;
// a row someone edited into nonsense is skipped and named, and the rest
// are still listed.
func TestCarryable(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "state.db"))
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
