package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bailiff/internal/pgtest"
	"bailiff/state"
)

// TestPostgresDownFailsClosed: a real `bailiff run` in front of the real
// server-everything keeps its tenant counters in a PostgreSQL cluster of
// the test's own. The cluster is stopped in the middle of the run: every
// call is refused, saying why, and none reaches the server (its echo never
// comes back); the cluster is started again and the same gateway process
// serves again by itself, on the counts it kept. The log verifies.
func TestPostgresDownFailsClosed(t *testing.T) {
	pg := pgtest.NewCluster(t)
	everything := filepath.Join(peers, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(everything); err != nil {
		if os.Getenv("BAILIFF_PEERS_REQUIRED") != "" {
			t.Fatalf("server-everything is not installed: %v", err)
		}
		t.Skip("server-everything is not installed: npm ci --prefix proxy/testdata/peers")
	}
	r := newRestartRig(t, `version: 1
rules:
  - {id: echo, tool: echo, action: allow}
tools:
  echo: {cost: 1}
tenants:
  "*": {ceiling: 3, window: 87840h}
`)
	r.db = pg.DSN
	r.command = []string{"node", everything}
	r.start()
	echo := func(msg string) (string, bool) {
		t.Helper()
		text, isErr, err := r.call("echo", map[string]any{"message": msg})
		if err != nil {
			t.Fatalf("echo %s: %v\n%s", msg, err, r.stderr.String())
		}
		return text, isErr
	}
	if text, isErr := echo("before"); isErr || text != "Echo: before" {
		t.Fatalf("before the stop: %q", text)
	}

	pg.Stop()
	for _, msg := range []string{"down-1", "down-2", "down-3", "down-4"} {
		text, isErr := echo(msg)
		if !isErr || strings.Contains(text, "Echo:") || !strings.Contains(text, "bailiff denied this call: the tenant counters cannot be read or kept") {
			t.Fatalf("a call while the database is down: %q (error %v)", text, isErr)
		}
		if strings.Contains(text, "127.0.0.1") || strings.Contains(text, "postgres") {
			t.Fatalf("the agent was told where the state database is: %q", text)
		}
	}

	pg.Start()
	if text, isErr := echo("after"); isErr || text != "Echo: after" {
		t.Fatalf("after the database came back: %q\n%s", text, r.stderr.String())
	}
	// The ceiling of 3 counts the two forwarded calls, and nothing of the
	// four refused while the database was down.
	if text, _ := echo("third"); text != "Echo: third" {
		t.Fatalf("the third forwarded call: %q", text)
	}
	if text, isErr := echo("fourth"); !isErr || !strings.Contains(text, "has spent 3 of its ceiling 3") {
		t.Fatalf("the fourth forwarded call: %q", text)
	}
	r.stop()
	if !r.said("call c2 refused") {
		t.Errorf("the gateway did not report the refusals on stderr:\n%s", r.stderr.String())
	}
	verifiesWithCalls(t, r.audit, 4)
}

// TestReplicaName: a configured replica name is kept; one holding a
// control character (it would forge lines in whatever shows it) or too
// long is refused; on SQLite none is written unless configured.
func TestReplicaName(t *testing.T) {
	st, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, c := range []struct{ named, want, err string }{
		{"", "", ""},
		{"eu-west-1a", "eu-west-1a", ""},
		{"a\nb", "", "printable"},
		{strings.Repeat("x", 129), "", "at most 128"},
	} {
		got, err := replicaName(c.named, st)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("replicaName(%q) = %q, %v; want %q, %q", c.named, got, err, c.want, c.err)
		}
	}
}
