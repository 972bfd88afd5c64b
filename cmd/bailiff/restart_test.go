package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"bailiff/chain"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// restartRig is a real `bailiff run` in front of the real
// server-filesystem, started and killed as a process, with its log and
// state database kept across restarts, and a client that cannot put a
// question to a human (so an ask waits for `bailiff approve`).
type restartRig struct {
	t                          *testing.T
	dir, share, audit, db, lee string
	policy, server, leePub     string
	command, env               []string // the server, when not server-filesystem
	cmd                        *exec.Cmd
	cs                         *mcp.ClientSession
	stderr                     *syncBuffer
	cancel                     context.CancelFunc
}

func newRestartRig(t *testing.T, policy string) *restartRig {
	server := filepath.Join(peers, "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(server); err != nil {
		if os.Getenv("BAILIFF_PEERS_REQUIRED") != "" {
			t.Fatalf("server-filesystem is not installed: %v", err)
		}
		t.Skip("server-filesystem is not installed: npm ci --prefix proxy/testdata/peers")
	}
	dir := t.TempDir()
	r := &restartRig{t: t, dir: dir, share: filepath.Join(dir, "share"), audit: filepath.Join(dir, "logs", "audit.jsonl"),
		db: filepath.Join(dir, "logs", "state.db"), lee: filepath.Join(dir, "keys", "lee"), server: server}
	if err := errors.Join(os.MkdirAll(r.share, 0o755), os.MkdirAll(filepath.Dir(r.lee), 0o700)); err != nil {
		t.Fatal(err)
	}
	r.policy = writeTestFile(t, dir, "policy.yaml", policy)
	var out strings.Builder
	if code := run([]string{"keygen", "--approver", "lee", "-o", r.lee}, nil, &out, &out); code != 0 {
		t.Fatalf("keygen: %s", out.String())
	}
	r.leePub = r.lee + ".pub"
	return r
}

// start starts the gateway and connects the client.
func (r *restartRig) start() {
	r.t.Helper()
	command := r.command
	if command == nil {
		command = []string{"node", r.server, r.share}
	}
	r.cmd = exec.Command(os.Args[0], append([]string{"run", "--server", "fs", "--policy", r.policy, "--audit", r.audit, "--state", r.db,
		"--approver-key", r.leePub, "--"}, command...)...)
	r.cmd.Env = append(append(os.Environ(), childEnv+"=1", "USER=ana"), r.env...)
	r.stderr = &syncBuffer{}
	r.cmd.Stderr = r.stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	r.cancel = cancel
	client := mcp.NewClient(&mcp.Implementation{Name: "restart-test", Version: "0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: r.cmd}, nil)
	if err != nil {
		r.t.Fatalf("connect: %v\n%s", err, r.stderr.String())
	}
	r.cs = cs
}

// said tells whether the process's stderr holds every one of subs,
// waiting a while for them: the process writes stderr through a pipe
// that is copied into the buffer concurrently, so a line written just
// before an answer on stdout may land in the buffer just after it.
func (r *restartRig) said(subs ...string) bool {
	deadline := time.Now().Add(10 * time.Second)
	for {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(r.stderr.String(), s)
		}
		if all || time.Now().After(deadline) {
			return all
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a process's stderr, read while the process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// kill stops the gateway with SIGKILL: no end record, nothing flushed
// but what was written.
func (r *restartRig) kill() {
	r.cmd.Process.Kill()
	r.cs.Close()
	r.cancel()
}

// stop ends the client's session and waits for the gateway to end its
// own: a clean stop, with an end record.
func (r *restartRig) stop() {
	r.cs.Close()
	r.cmd.Wait()
	r.cancel()
}

// askedWhileUp starts the gateway, has the write asked, kills the gateway
// and approves the ask while it is down; it returns the approval's id.
func (r *restartRig) askedWhileUp(path, content string) string {
	r.t.Helper()
	r.start()
	id := r.asked(path, content)
	r.kill()
	r.approve(id)
	return id
}

// writesAfterRestart starts the gateway again and wants the write, which
// the approval given while it was down allows, to go through.
func (r *restartRig) writesAfterRestart(path, content string) {
	r.t.Helper()
	r.start()
	if text, isErr := r.write(path, content); isErr {
		r.t.Fatalf("the approved write after the restart: %q\n%s", text, r.stderr.String())
	}
}

func (r *restartRig) write(path, content string) (string, bool) {
	r.t.Helper()
	text, isErr, err := r.call("write_file", map[string]any{"path": path, "content": content})
	if err != nil {
		r.t.Fatalf("write_file: %v\n%s", err, r.stderr.String())
	}
	return text, isErr
}

// call calls a tool; err is the session's failure (a killed gateway).
func (r *restartRig) call(name string, args map[string]any) (text string, isErr bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", false, err
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n"), res.IsError, nil
}

var approveID = regexp.MustCompile(`bailiff approve (\S+) --state `)

// asked wants the write refused with an ask out of band, and returns its
// approval id.
func (r *restartRig) asked(path, content string) string {
	r.t.Helper()
	text, isErr := r.write(path, content)
	m := approveID.FindStringSubmatch(text)
	if !isErr || m == nil {
		r.t.Fatalf("write %s: %q, want an ask naming bailiff approve", path, text)
	}
	return m[1]
}

func (r *restartRig) approve(id string) {
	r.t.Helper()
	var out strings.Builder
	if code := run([]string{"approve", id, "--state", r.db, "--key", r.lee + ".key"}, nil, &out, &out); code != 0 {
		r.t.Fatalf("approve %s: exit %d\n%s", id, code, out.String())
	}
}

// TestRestartBetweenAskAndAnswer: the gateway is killed after an ask and
// started again; the answer, given while it was down, settles the ask in
// the new session: the approved write lands, once. A second identical
// write is asked again, and the log (two sessions, the first never ended)
// verifies.
func TestRestartBetweenAskAndAnswer(t *testing.T) {
	r := newRestartRig(t, "version: 1\nrules:\n  - {id: write, tool: write_file, action: ask, reason: a human confirms every write}\n")
	out := filepath.Join(r.share, "out.txt")
	id := r.askedWhileUp(out, "hello")

	r.writesAfterRestart(out, "hello")
	if b, err := os.ReadFile(out); err != nil || string(b) != "hello" {
		t.Fatalf("the approved write did not land: %q %v", b, err)
	}
	if !r.said("took up the approval " + id + " by lee") {
		t.Errorf("the gateway did not say it took up the approval:\n%s", r.stderr.String())
	}
	os.Remove(out)
	r.asked(out, "hello")
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the approval was used twice")
	}
	r.stop()
	verifiesWithCalls(t, r.audit, 3)
}

// TestApprovalExpiredWhileDown: an approval lives the policy's TTL from
// its signing; one that ran out while the gateway was down stays expired:
// the restarted gateway does not take it up, says why, and the write is
// asked again.
func TestApprovalExpiredWhileDown(t *testing.T) {
	r := newRestartRig(t, "version: 1\napproval: {ttl: 1s}\nrules:\n  - {id: write, tool: write_file, action: ask}\n")
	out := filepath.Join(r.share, "out.txt")
	id := r.askedWhileUp(out, "hello")
	time.Sleep(1500 * time.Millisecond)
	r.start()
	r.asked(out, "hello")
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("an expired approval allowed the write")
	}
	if !r.said("did not take up the answer to "+id, "it expired at") {
		t.Errorf("the gateway did not say why it left the approval:\n%s", r.stderr.String())
	}
	r.stop()
	verifiesWithCalls(t, r.audit, 2)
}

// TestCarriedGrantForgeries: what a carried grant claims that its
// signature does not cover is checked against the session that asked it.
// From a real log where a restarted gateway took up an approval, an editor
// who can re-seal the log (1) moves the grant to a call the first session
// never asked, (2) replays the grant and its call in a session of its own
// making, using the approval twice, and (3) does so for another principal.
// Each is a verify finding that names what it claims.
func TestCarriedGrantForgeries(t *testing.T) {
	r := newRestartRig(t, "version: 1\nrules:\n  - {id: write, tool: write_file, action: ask, reason: a human confirms every write}\n")
	out := filepath.Join(r.share, "out.txt")
	r.askedWhileUp(out, "hello")
	r.writesAfterRestart(out, "hello")
	r.stop()
	recs := readRecords(t, r.audit)
	var second string
	for _, rec := range recs {
		if rec.Kind == chain.KindGrant && strings.Contains(string(rec.Body), `"from":`) {
			second = rec.Session
		}
	}
	if second == "" {
		t.Fatal("the log holds no carried grant")
	}
	for _, c := range []struct {
		name, want string
		edit       func(recs []chain.Record) []chain.Record
	}{
		{"another call", "that session recorded no asked call c9", func(recs []chain.Record) []chain.Record {
			for i, rec := range recs {
				if rec.Kind == chain.KindGrant && rec.Session == second {
					recs[i].Body = json.RawMessage(strings.Replace(string(rec.Body), `"call":"c1"`, `"call":"c9"`, 1))
				}
			}
			return recs
		}},
		{"settling here", "must be signed, from another session, and settle nothing", func(recs []chain.Record) []chain.Record {
			for i, rec := range recs {
				if rec.Kind == chain.KindGrant && rec.Session == second {
					body := strings.TrimSuffix(string(rec.Body), "}") + `,"decision":{"verdict":"allow","check":"approval","reason":"x"}}`
					recs[i].Body = json.RawMessage(body)
				}
			}
			return recs
		}},
		{"stretched expiry", "later than its signed time plus the policy's approval TTL", func(recs []chain.Record) []chain.Record {
			// Recorded two hours after the approval was signed, with an
			// expiry fifteen minutes after the record: not under the
			// signature, and a lie.
			started := false
			for i, rec := range recs {
				started = started || rec.Session == second
				if !started {
					continue
				}
				recs[i].TS = rec.TS.Add(2 * time.Hour)
				if rec.Kind == chain.KindGrant && rec.Session == second {
					exp := regexp.MustCompile(`"expires":"[^"]*"`)
					late := recs[i].TS.Add(15 * time.Minute).UTC().Format(chain.TimeFormat)
					recs[i].Body = json.RawMessage(exp.ReplaceAllString(string(rec.Body), `"expires":"`+late+`"`))
				}
			}
			return recs
		}},
		{"asked after", "comes later in the log than the grant", func(recs []chain.Record) []chain.Record {
			// The asking session's records moved after the session that
			// took its approval up.
			var first, rest []chain.Record
			for _, rec := range recs {
				if rec.Session != second {
					first = append(first, rec)
				} else {
					rest = append(rest, rec)
				}
			}
			return append(rest, first...)
		}},
		{"used twice", "was already used by call c1 of session " + second, func(recs []chain.Record) []chain.Record {
			return append(recs, replayed(recs, second, "forged-session", "")...)
		}},
		{"another principal", `that session acted for "ana", this one for "bob"`, func(recs []chain.Record) []chain.Record {
			return append(recs, replayed(recs, second, "bobs-session", "bob")...)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			forged := filepath.Join(r.dir, strings.ReplaceAll(c.name, " ", "-")+".jsonl")
			writeRecords(t, forged, c.edit(slices.Clone(recs)))
			var report strings.Builder
			code := run([]string{"verify", forged}, nil, &report, &report)
			if code != 1 || !strings.Contains(report.String(), c.want) {
				t.Fatalf("verify: exit %d, want 1 and a finding saying %q:\n%s", code, c.want, report.String())
			}
		})
	}
	// A replica's log that uses the approval again: the honest log and
	// the other verified together, the second use is the other's finding.
	t.Run("used in another log", func(t *testing.T) {
		other := filepath.Join(r.dir, "replica-b.jsonl")
		writeRecords(t, other, replayed(recs, second, "replica-b-session", ""))
		var report strings.Builder
		code := run([]string{"verify", r.audit, other}, nil, &report, &report)
		want := "grant " + firstGrant(recs, second) + " was already used by call c1 of session " + second + " in " + r.audit + ": an approval is used once, across every log that shares it"
		if code != 1 || !strings.Contains(report.String(), want) {
			t.Fatalf("verify: exit %d, want 1 and a finding saying %q:\n%s", code, want, report.String())
		}
	})
}

// firstGrant is the id of the first grant session holds.
func firstGrant(recs []chain.Record, session string) string {
	for _, rec := range recs {
		if rec.Kind == chain.KindGrant && rec.Session == session {
			var b struct{ Grant string }
			json.Unmarshal(rec.Body, &b)
			return b.Grant
		}
	}
	return ""
}

// replayed copies session from's start, carried grant and calls as a new
// session as, acting for principal (from's when "").
func replayed(recs []chain.Record, from, as, principal string) []chain.Record {
	var out []chain.Record
	for _, rec := range recs {
		if rec.Session != from || (rec.Kind != chain.KindSession && rec.Kind != chain.KindGrant && rec.Kind != chain.KindCall) {
			continue
		}
		rec.Session = as
		if principal != "" && rec.Kind == chain.KindSession {
			rec.Body = json.RawMessage(strings.Replace(string(rec.Body), `"subject":"ana"`, `"subject":"`+principal+`"`, 1))
		}
		out = append(out, rec)
	}
	return out
}

func readRecords(t *testing.T, log string) []chain.Record {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []chain.Record
	rd := chain.NewReader(f)
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return recs
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
}

// writeRecords seals recs as a new log, as anyone holding the log can.
func writeRecords(t *testing.T, log string, recs []chain.Record) {
	t.Helper()
	var out bytes.Buffer
	w := chain.NewWriter(&out, chain.None)
	for _, rec := range recs {
		if _, err := w.Append(rec.TS, rec.Session, rec.Kind, rec.Body); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(log, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReconcileAfterUncleanStop: the gateway writes the log before the
// state database, so a stop between the two leaves an approval the log
// shows used and the database does not (its grant unused, or not even
// made). The restarted gateway reconciles the database from the log and
// says so, and the approval is not used again.
func TestReconcileAfterUncleanStop(t *testing.T) {
	r := newRestartRig(t, "version: 1\nrules:\n  - {id: write, tool: write_file, action: ask}\n")
	out := filepath.Join(r.share, "out.txt")
	id := r.askedWhileUp(out, "hello")
	r.writesAfterRestart(out, "hello")
	r.kill()
	for _, lost := range []string{
		"UPDATE grants SET used_at = NULL, used_by = NULL",      // stopped before the use was marked
		"DELETE FROM grants; UPDATE asks SET settled_at = NULL", // stopped before it was even taken up
	} {
		editDB(t, r.db, lost)
		os.Remove(out)
		r.start()
		if !r.said("reconciled the state database with the audit log: approval " + id + " was used by ") {
			t.Fatalf("after %q the gateway did not reconcile:\n%s", lost, r.stderr.String())
		}
		r.asked(out, "hello")
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("after %q the approval was used again", lost)
		}
		r.kill()
	}
	verifiesWithCalls(t, r.audit, 4)
}

func editDB(t *testing.T, path, query string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query); err != nil {
		t.Fatal(err)
	}
}

// TestCarryChecksTheLog: the state database only points at an approval;
// the gateway checks the log before it takes one up. Someone who can
// write the database moves an approval to another principal or another
// log, or marks a used one unused while the gateway runs: nothing is
// forwarded, and the gateway says why.
func TestCarryChecksTheLog(t *testing.T) {
	for _, c := range []struct {
		name, edit, want string
		user, log        string
		usedFirst        bool
	}{
		{name: "another principal", edit: "UPDATE asks SET principal = 'bob'", user: "bob", want: `it was asked for "ana", not "bob"`},
		{name: "another log", edit: "UPDATE asks SET log = '{OTHER}'", log: "other.jsonl", want: "the audit log records no such ask"},
		{name: "used, then reset while running", edit: "UPDATE grants SET used_at = NULL, used_by = NULL", usedFirst: true, want: "the audit log shows it used already, by "},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRestartRig(t, "version: 1\nrules:\n  - {id: write, tool: write_file, action: ask}\n")
			out := filepath.Join(r.share, "out.txt")
			id := r.askedWhileUp(out, "hello")
			if c.usedFirst {
				r.writesAfterRestart(out, "hello")
				r.kill()
				os.Remove(out)
			}
			if c.log != "" {
				r.audit = filepath.Join(r.dir, "logs", c.log)
			}
			if c.user != "" {
				r.env = []string{"USER=" + c.user}
			}
			r.start()
			editDB(t, r.db, strings.ReplaceAll(c.edit, "{OTHER}", r.audit))
			r.asked(out, "hello")
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("the approval was taken up")
			}
			if !r.said("did not take up the answer to "+id, c.want) {
				t.Fatalf("the gateway did not say %q:\n%s", c.want, r.stderr.String())
			}
			r.kill()
		})
	}
}
