package proxy

import (
	"database/sql"
	"path/filepath"
	"testing"

	"bailiff/state"
)

// testApprovals is a state database beside the test's audit log, as the
// gateway's default one would be in the user's state directory.
func testApprovals(t testing.TB, logPath string) *Approvals {
	t.Helper()
	st, err := state.Open(filepath.Join(filepath.Dir(logPath), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &Approvals{Store: st, Log: logPath, StateArg: st.Path()}
}

// editState changes the state database behind the gateway's back, as
// anyone who can write the file could with the sqlite3 shell.
func editState(t testing.TB, a *Approvals, query string, args ...any) {
	t.Helper()
	db, err := sql.Open("sqlite", a.Store.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatal(err)
	}
}
