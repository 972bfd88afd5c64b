package proxy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"bailiff/internal/fault"
)

// TestGrantSpentInState: an approval given out of band is used through
// the state database: the retry it allows marks it used there, by that
// call, before the server is called; and when the database cannot mark
// it (the disk is full), nothing is forwarded: the call is refused and
// closed as failed, and the log still verifies.
func TestGrantSpentInState(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/idsteal-server.js")
	mark := filepath.Join(t.TempDir(), "paid")
	policy := `version: 1
rules:
  - {id: pay, tool: pay, action: ask}
`
	lee, leePub := approverKey(t, "lee")
	s := start(t, setup{policy: policy, server: "weather", subject: "ana", approval: true, approvers: []string{leePub},
		command: []string{"node", script}, env: []string{"IDSTEAL_MARK=" + mark}})
	pay := func(to string) (string, bool) {
		r := s.call("pay", map[string]any{"to": to})
		return text(r), r.IsError
	}
	ask := func(to string) string {
		t.Helper()
		if got, isErr := pay(to); !isErr || !strings.Contains(got, "bailiff approve") {
			t.Fatalf("pay %s: %q, want an ask", to, got)
		}
		list, err := s.options.Approvals.List()
		if err != nil || len(list) == 0 {
			t.Fatalf("pending: %v %v", list, err)
		}
		return list[len(list)-1].ID
	}

	id := ask("alice")
	s.answer(id, "approve", lee)
	if got, isErr := pay("alice"); isErr || got != "paid" {
		t.Fatalf("the approved retry: %q", got)
	}
	g, ok, err := s.options.Approvals.Store.GetGrant(id)
	if err != nil || !ok || g.Used.IsZero() || !strings.HasPrefix(g.UsedBy, "test-session/c") || !g.Approve || g.Approver != "lee" {
		t.Fatalf("grant %s in the state database: %+v %v %v", id, g, ok, err)
	}
	os.Remove(mark)

	id = ask("bob")
	s.answer(id, "approve", lee)
	restore := fault.SetErr(func(point, detail string) error {
		if point == fault.StateWrite && detail == "using grant "+id {
			return &os.PathError{Op: "write", Path: "state.db", Err: syscall.ENOSPC}
		}
		return nil
	})
	got, isErr := pay("bob")
	restore()
	if !isErr || !strings.Contains(got, "its approval cannot be used") || !strings.Contains(got, "disk is full") {
		t.Fatalf("the retry whose grant could not be marked used: %q", got)
	}
	if _, err := os.Stat(mark); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the server was called although its grant could not be marked used")
	}
	if g, _, _ := s.options.Approvals.Store.GetGrant(id); !g.Used.IsZero() {
		t.Fatalf("grant %s was marked used: %+v", id, g)
	}
	// The engine spent the grant when it allowed the call: a retry asks
	// again rather than using it unmarked.
	if got, isErr := pay("bob"); !isErr || !strings.Contains(got, "bailiff approve") {
		t.Fatalf("a second retry: %q, want a new ask", got)
	}
	if _, err := os.Stat(mark); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the server was called on the second retry")
	}
	s.verify() // verifyClean: every recorded decision recomputes
}

// TestBudgetsSaved: when a session ends, what it used of its budgets is
// in the state database for an operator to read: forwarded calls that
// did not fail, per tool.
func TestBudgetsSaved(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/idsteal-server.js")
	policy := "version: 1\nrules:\n  - {id: all, tool: \"*\", action: allow}\n"
	s := start(t, setup{policy: policy, server: "weather", subject: "ana", approval: true,
		command: []string{"node", script}, env: []string{"IDSTEAL_MARK=" + filepath.Join(t.TempDir(), "paid")}})
	for range 3 {
		if r := s.call("pay", map[string]any{}); r.IsError {
			t.Fatalf("pay: %q", text(r))
		}
	}
	s.verify() // ends the session
	if n, err := s.options.Approvals.Store.Spent("test-session", "weather", "pay"); err != nil || n != 3 {
		t.Fatalf("the state database says the session used pay %d times (%v), want 3", n, err)
	}
}
