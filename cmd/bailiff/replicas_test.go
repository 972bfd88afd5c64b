package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/chain"
	"bailiff/internal/pgtest"
)

// The load: loadClients HTTP clients at once, each making loadCalls
// echo calls and, one in eight, a get-sum call a human must approve,
// all for one tenant whose ceiling is loadCeiling echo calls: fewer than
// are made, so the ceiling is reached while the load runs. A sum costs
// nothing, so an approval is never refused by the ceiling and its use
// is always tested.
const (
	loadClients = 64
	loadCalls   = 4
	loadCeiling = 150
)

// TestReplicasUnderLoad: two `bailiff gateway --listen` replicas, each
// with its own audit log and its own real server-everything, share one
// tenant budget and the approvals in PostgreSQL; 64 HTTP clients (the Go
// SDK's, at the stateless revision) call through them at once, and the
// asks they get are approved with `bailiff approve` against the database
// while the load runs. Afterwards every call has exactly one decision
// across the logs, the logs verify together, the tenant spent exactly
// its ceiling and never more, and no approval was used twice. The same
// runs with SQLite and one replica, without PostgreSQL.
func TestReplicasUnderLoad(t *testing.T) {
	t.Run("postgres", func(t *testing.T) { loadReplicas(t, pgtest.Schema(t), 2) })
	t.Run("sqlite", func(t *testing.T) { loadReplicas(t, filepath.Join(t.TempDir(), "state.db"), 1) })
}

func loadReplicas(t *testing.T, db string, replicas int) {
	everything := filepath.Join(peers, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(everything); err != nil {
		if os.Getenv("BAILIFF_PEERS_REQUIRED") != "" {
			t.Fatalf("server-everything is not installed: %v", err)
		}
		t.Skip("server-everything is not installed: npm ci --prefix proxy/testdata/peers")
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "lee")
	var out strings.Builder
	if code := run([]string{"keygen", "--approver", "lee", "-o", key}, nil, &out, &out); code != 0 {
		t.Fatalf("keygen: %s", out.String())
	}
	policy := writeTestFile(t, dir, "policy.yaml", fmt.Sprintf(`version: 1
rules:
  - {id: echo, server: everything, tool: echo, action: allow}
  - {id: sum, server: everything, tool: get-sum, action: ask, reason: a human confirms every sum}
tools:
  get-sum: {cost: 0}
tenants:
  acme: {ceiling: %d, window: 87840h}
`, loadCeiling))
	var logs, urls []string
	for i := range replicas {
		audit := filepath.Join(dir, fmt.Sprintf("replica-%d.jsonl", i))
		config := writeTestFile(t, dir, fmt.Sprintf("gw-%d.yaml", i), fmt.Sprintf(`policy: %s
audit: %s
state: %s
replica: replica-%d
approver_keys: [%s]
principal: {subject: loader, tenant: acme}
servers:
  everything:
    command: node
    args: [%s]
`, policy, audit, db, i, key+".pub", everything))
		logs = append(logs, audit)
		urls = append(urls, startListening(t, config))
	}

	var sent, succeeded, approved atomic.Int64
	usedBy := map[string]int{} // approval id -> allowed sums that used it
	var wg sync.WaitGroup
	errs := make(chan error, loadClients)
	for c := range loadClients {
		wg.Go(func() {
			if err := loadClient(urls[c%replicas], c, db, key, &sent, &succeeded, &approved); err != nil {
				errs <- fmt.Errorf("client %d: %w", c, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	stopListening(t)
	if t.Failed() {
		return
	}

	// Exactly one decision per request, across the logs.
	decisions := 0
	seen := map[string]bool{}
	for _, log := range logs {
		for _, rec := range readRecords(t, log) {
			if rec.Kind != chain.KindCall && rec.Kind != chain.KindMalformed {
				continue
			}
			decisions++
			var b struct{ Call, Verdict, Grant string } // a decision's keys are the body's
			json.Unmarshal(rec.Body, &b)
			k := log + "\x00" + rec.Session + "\x00" + b.Call
			if rec.Kind == chain.KindCall && seen[k] {
				t.Errorf("%s: call %s of session %s decided twice", log, b.Call, rec.Session)
			}
			seen[k] = true
			if b.Grant != "" && b.Verdict == "allow" {
				usedBy[b.Grant]++
			}
		}
	}
	if int64(decisions) != sent.Load() {
		t.Errorf("%d requests were sent, and the logs hold %d decisions", sent.Load(), decisions)
	}
	for id, n := range usedBy {
		if n != 1 {
			t.Errorf("approval %s allowed %d calls", id, n)
		}
	}
	if approved.Load() != loadClients/8 || len(usedBy) != loadClients/8 {
		t.Errorf("%d approvals given and %d used, want %d of each", approved.Load(), len(usedBy), loadClients/8)
	}
	// Every echo forwarded succeeded, so the tenant spent one per success:
	// more than the ceiling would be an overspend, less a lost count.
	if succeeded.Load() != loadCeiling {
		t.Errorf("%d echo calls went through for a ceiling of %d", succeeded.Load(), loadCeiling)
	}
	var report strings.Builder
	if code := run(append([]string{"verify"}, logs...), nil, &report, &report); code != 0 {
		t.Errorf("the logs do not verify together: exit %d\n%s", code, report.String())
	}
}

var approveOf = regexp.MustCompile(`bailiff approve (\S+)`)

// loadClient is one HTTP client: for one in eight a sum that is asked,
// approved and retried (askedSum), then its echo calls.
func loadClient(url string, c int, db, key string, sent, succeeded, approved *atomic.Int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprint("load-", c), Version: "0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		return err
	}
	defer cs.Close()
	call := func(tool string, args map[string]any) (string, bool, error) {
		sent.Add(1)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything." + tool, Arguments: args})
		if err != nil {
			return "", false, err
		}
		var texts []string
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				texts = append(texts, tc.Text)
			}
		}
		text := strings.Join(texts, "\n")
		if !res.IsError && tool == "echo" {
			succeeded.Add(1)
		} else if res.IsError && !strings.HasPrefix(text, "bailiff denied this call") && !strings.HasPrefix(text, "bailiff: this call needs a human's approval") {
			return text, true, fmt.Errorf("%s failed upstream: %s", tool, text)
		}
		return text, res.IsError, nil
	}
	// The sum first, so that it is asked while the ceiling has room.
	if c%8 == 0 {
		if err := askedSum(c, call, db, key, approved); err != nil {
			return err
		}
	}
	for i := range loadCalls {
		msg := fmt.Sprintf("client %d call %d", c, i)
		text, isErr, err := call("echo", map[string]any{"message": msg})
		switch {
		case err != nil:
			return err
		case !isErr && text != "Echo: "+msg:
			return fmt.Errorf("echo %q answered %q", msg, text)
		case isErr && !strings.Contains(text, "check tenant-budget"):
			return fmt.Errorf("echo %q refused by something else than the ceiling: %s", msg, text)
		}
	}
	return nil
}

// askedSum calls get-sum, which is asked; approves it with `bailiff
// approve` against the database, as a human would while the load runs;
// and retries it, which takes the answer (or is refused by a ceiling
// reached meanwhile).
func askedSum(c int, call func(string, map[string]any) (string, bool, error), db, key string, approved *atomic.Int64) error {
	args := map[string]any{"a": c, "b": 1}
	text, isErr, err := call("get-sum", args)
	m := approveOf.FindStringSubmatch(text)
	if err != nil || !isErr || m == nil {
		return fmt.Errorf("the sum was not asked: %q %v", text, err)
	}
	if strings.Contains(text, "postgres://") {
		return fmt.Errorf("the ask told the agent where the state database is: %s", text)
	}
	var out strings.Builder
	if code := run([]string{"approve", m[1], "--state", db, "--key", key + ".key"}, nil, &out, &out); code != 0 {
		return fmt.Errorf("approve %s: exit %d: %s", m[1], code, out.String())
	}
	approved.Add(1)
	// Two retries at once race for the answer: one takes it, and the
	// other is asked again.
	type try struct {
		text  string
		isErr bool
		err   error
	}
	tries := make([]try, 2)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Go(func() {
			t := &tries[i]
			t.text, t.isErr, t.err = call("get-sum", args)
		})
	}
	wg.Wait()
	took := 0
	for _, t := range tries {
		switch {
		case t.err != nil:
			return t.err
		case !t.isErr && !strings.Contains(t.text, fmt.Sprint(c+1)):
			return fmt.Errorf("the approved sum answered %q", t.text)
		case !t.isErr:
			took++
		case approveOf.FindString(t.text) == "":
			return fmt.Errorf("a retry of the approved sum was refused: %s", t.text)
		}
	}
	if took != 1 {
		return fmt.Errorf("one approval allowed %d of two retries of its sum", took)
	}
	return nil
}

var listening struct {
	sync.Mutex
	cmds []*exec.Cmd
}

// startListening starts `bailiff gateway --listen` on config and returns
// the URL it serves; stopListening stops every one with SIGINT, and waits.
func startListening(t *testing.T, config string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "gateway", "--config", config, "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), childEnv+"=1", "USER=tester")
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening.Lock()
	listening.cmds = append(listening.cmds, cmd)
	listening.Unlock()
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := bufio.NewScanner(errPipe)
	var url string
	var said []string
	for url == "" && lines.Scan() {
		said = append(said, lines.Text())
		if _, after, ok := strings.Cut(lines.Text(), "serving Streamable HTTP at "); ok {
			url = after
		}
	}
	if url == "" {
		t.Fatalf("gateway --listen said no URL:\n%s", strings.Join(said, "\n"))
	}
	go func() {
		for lines.Scan() {
		}
	}()
	return url
}

func stopListening(t *testing.T) {
	listening.Lock()
	defer listening.Unlock()
	for _, cmd := range listening.cmds {
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("gateway --listen after SIGINT: %v", err)
		}
	}
	listening.cmds = nil
}
