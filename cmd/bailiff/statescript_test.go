package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"bailiff/proxy"
	"bailiff/state"
)

// stateAsk is the script command "state-ask DB LOG FILE.json": it
// records the pending ask in FILE (proxy.Pending's JSON) in the state
// database DB as asked in the audit log LOG, as a gateway would.
func stateAsk(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: state-ask DB LOG FILE.json")
	}
	var p proxy.Pending
	if err := json.Unmarshal([]byte(ts.ReadFile(args[2])), &p); err != nil {
		ts.Fatalf("%s: %v", args[2], err)
	}
	st, err := state.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	defer st.Close()
	a := &proxy.Approvals{Store: st, Log: ts.MkAbs(args[1])}
	ts.Check(a.Ask(p))
}

// stateSQL is the script command "state-sql DB QUERY [WANT]": it runs
// QUERY on the state database DB as anyone with the sqlite3 shell could;
// with WANT, the rows it returns (columns joined by |, rows by ;) must
// be WANT ("" for none).
func stateSQL(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 && len(args) != 3 {
		ts.Fatalf("usage: state-sql DB QUERY [WANT]")
	}
	db, err := sql.Open("sqlite", ts.MkAbs(args[0]))
	ts.Check(err)
	defer db.Close()
	rows, err := db.Query(args[1])
	ts.Check(err)
	defer rows.Close()
	cols, err := rows.Columns()
	ts.Check(err)
	var got []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		ts.Check(rows.Scan(ptrs...))
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = fmt.Sprint(v)
		}
		got = append(got, strings.Join(row, "|"))
	}
	ts.Check(rows.Err())
	if len(args) == 3 && (strings.Join(got, ";") == args[2]) == neg {
		ts.Fatalf("state-sql %s: got %q, want %s%q", args[1], strings.Join(got, ";"), map[bool]string{true: "not ", false: ""}[neg], args[2])
	}
}
