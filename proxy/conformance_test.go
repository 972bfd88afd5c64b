package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"bailiff/chain"
	"bailiff/internal/fault"
)

// The official MCP conformance suite (@modelcontextprotocol/conformance,
// pinned in testdata/peers/package.json) is run against the Go SDK's
// conformance server directly, then through bailiff: a gateway in front
// of a server must change nothing but the calls it refuses, so every
// scenario that passes directly must pass through bailiff.

const conformancePolicy = `version: 1
name: allow-all
rules:
  - {id: all, tool: "*", action: allow}
`

// conformanceExpected are the scenarios the server fails directly, with
// why: they are not held against bailiff, and a scenario that starts or
// stops failing directly fails the test, so the list stays true. The Go
// SDK's conformance/baseline.yml lists none for the server side of the
// suite's active scenarios (only OAuth client scenarios).
var conformanceExpected = map[string]string{}

// suiteLine is one scenario's line in the suite's summary, and oneLine
// the result of a run of one scenario.
var (
	suiteLine = regexp.MustCompile(`^([✓✗]) (\S+): (\d+) passed, (\d+) failed$`)
	oneLine   = regexp.MustCompile(`^Passed: (\d+)/(\d+), (\d+) failed`)
)

// runSuite runs the suite's server scenarios (one, if scenario is set)
// against url and returns each scenario's outcome.
func runSuite(t *testing.T, url, scenario string) map[string]bool {
	t.Helper()
	cli := filepath.Join(peer(t, "@modelcontextprotocol/conformance"), "dist", "index.js")
	args := []string{cli, "server", "--url", url}
	if scenario != "" {
		args = append(args, "--scenario", scenario)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = t.TempDir()          // it writes results/ where it runs
	out, _ := cmd.CombinedOutput() // failing scenarios exit non-zero
	got := map[string]bool{}
	summary := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "=== SUMMARY ===" {
			summary = true
		}
		if m := suiteLine.FindStringSubmatch(line); summary && m != nil {
			failed, _ := strconv.Atoi(m[4])
			got[m[2]] = m[1] == "✓" && failed == 0
		}
		if m := oneLine.FindStringSubmatch(line); scenario != "" && m != nil {
			got[scenario] = m[1] == m[2] && m[3] == "0"
		}
	}
	if len(got) == 0 {
		t.Fatalf("the conformance suite reported no scenario against %s:\n%s", url, out)
	}
	return got
}

// freePort is a loopback address nothing listens on, for a server that
// takes its address as a flag.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// serveEverythingHTTP runs the conformance server on Streamable HTTP, as
// the suite's own CI does, and returns its URL.
func serveEverythingHTTP(t *testing.T, bin string) string {
	t.Helper()
	addr := freePort(t)
	cmd := exec.Command(bin, "-http="+addr, "-stateless=false")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
		if time.Now().After(deadline) {
			t.Fatal("the conformance server did not start listening")
		}
	}
}

// TestConformance: the suite passes through `run --listen`, and through
// `gateway --listen` serving the one server unprefixed, wherever it
// passes directly; every call the server was sent has its record in a
// log that verifies.
func TestConformance(t *testing.T) {
	peer(t, "@modelcontextprotocol/conformance")
	bin := everythingServer(t)
	direct := runSuite(t, serveEverythingHTTP(t, bin), "")
	passing := 0
	for name, ok := range direct {
		_, expected := conformanceExpected[name]
		switch {
		case ok && expected:
			t.Errorf("%s passes directly now: take it off the expected failures", name)
		case !ok && !expected:
			t.Errorf("%s fails directly, against the server alone: not bailiff's doing, but the run proves nothing of it", name)
		case ok:
			passing++
		}
	}
	for _, way := range []struct {
		name  string
		serve func(t *testing.T, up Upstream) *listening
	}{
		{"run --listen", func(t *testing.T, up Upstream) *listening {
			return startRelay(t, conformancePolicy, up, HTTPOptions{NoInitRate: true})
		}},
		{"gateway --listen", func(t *testing.T, up Upstream) *listening {
			return startListening(t, conformancePolicy, []Upstream{up}, HTTPOptions{NoInitRate: true},
				func(o *Options, _ string) { o.Unprefixed = true })
		}},
	} {
		t.Run(way.name, func(t *testing.T) {
			// The server's stdin is copied to a file, to count the calls
			// it was sent by every session.
			sent := filepath.Join(t.TempDir(), "sent.jsonl")
			l := way.serve(t, Upstream{Name: "everything", Cmd: exec.Command("sh", "-c", `tee -a "$0" | "$1"`, sent, bin)})
			through := runSuite(t, l.url, "")
			for name, ok := range direct {
				if ok && !through[name] {
					t.Errorf("%s passes directly but fails through bailiff %s", name, way.name)
				}
			}
			t.Logf("%d scenarios, %d passing directly; through %s: %v", len(direct), passing, way.name, through)
			l.stop()
			checkConformanceLog(t, l, sent)
		})
	}
}

// checkConformanceLog: the log verifies, and records exactly the calls
// the server was sent, each with its answer.
func checkConformanceLog(t *testing.T, l *listening, sent string) {
	t.Helper()
	got := readLogged(t, l.log)
	rep := l.verify(t, got.sessions)
	calls := sentCalls(t, sent)
	if len(calls) == 0 || !slices.Equal(calls, got.calls) || rep.Calls != len(calls) {
		t.Errorf("the server was sent tools/call of %q; the log records calls of %q (verify counted %d)", calls, got.calls, rep.Calls)
	}
	if len(got.answered) != len(calls) {
		t.Errorf("%d calls forwarded, %d answers recorded", len(calls), len(got.answered))
	}
}

// TestConformanceNoticesABrokenRelay: a gateway that drops one field of
// a relayed result (an image's mimeType) fails the suite: the run above
// can fail.
func TestConformanceNoticesABrokenRelay(t *testing.T) {
	peer(t, "@modelcontextprotocol/conformance")
	l := startRelay(t, conformancePolicy, Upstream{Name: "everything", Cmd: exec.Command(everythingServer(t))}, HTTPOptions{NoInitRate: true})
	if !runSuite(t, l.url, "tools-call-image")["tools-call-image"] {
		t.Fatal("tools-call-image fails through bailiff with nothing broken")
	}
	dropped := 0
	defer fault.SetEdit(func(point string, msg []byte) []byte {
		if point != fault.Relay || !bytes.Contains(msg, []byte(`"image"`)) {
			return nil
		}
		var m map[string]any
		if json.Unmarshal(msg, &m) != nil {
			return nil
		}
		res, _ := m["result"].(map[string]any)
		content, _ := res["content"].([]any)
		for _, c := range content {
			if c, ok := c.(map[string]any); ok && c["type"] == "image" {
				delete(c, "mimeType")
				dropped++
			}
		}
		b, _ := json.Marshal(m)
		return b
	})()
	if runSuite(t, l.url, "tools-call-image")["tools-call-image"] {
		t.Errorf("tools-call-image passes with the image's mimeType dropped from the relayed result (%d dropped)", dropped)
	}
	if dropped == 0 {
		t.Error("the edit dropped nothing: the relay never passed an image")
	}
}

// sentCalls are the tools/call requests the servers read.
func sentCalls(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, line := range strings.Split(string(b), "\n") {
		var m struct {
			Method string
			Params struct{ Name string }
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Method == "tools/call" {
			calls = append(calls, m.Params.Name)
		}
	}
	slices.Sort(calls)
	return calls
}

// logged is what a log records: its sessions, the tools its calls
// named, and the calls whose answer it holds.
type logged struct {
	sessions int
	calls    []string
	answered map[string]bool // session/call
}

func readLogged(t *testing.T, log string) logged {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	l := logged{answered: map[string]bool{}}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var r struct{ Kind, Session, Call, Tool string }
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("a log line that is not JSON: %v", err)
		}
		switch {
		case r.Kind == "session":
			l.sessions++
		case r.Kind == "call":
			l.calls = append(l.calls, r.Tool)
		case r.Kind == "result" && r.Call != "":
			l.answered[r.Session+"/"+r.Call] = true
		}
	}
	slices.Sort(l.calls)
	return l
}

// conformanceClientScenarios are the suite's client scenarios that apply
// to a gateway's upstream side.
var conformanceClientScenarios = []string{"initialize", "tools_call", "elicitation-sep1034-client-defaults"}

// conformanceClientKnown are the client scenarios that pass directly and
// fail through bailiff, with why: each is a gap of bailiff's, named, and
// one that starts passing fails the test, so the list stays true.
var conformanceClientKnown = map[string]string{}

// TestConformanceClient: the suite's client scenarios, played by a small
// SDK client directly and with bailiff (run --url, in process) as the
// client the suite's server sees: every scenario that passes directly
// passes through bailiff, and bailiff's logs verify. What passes is
// logged (docs/proxy.md records it).
func TestConformanceClient(t *testing.T) {
	cli := filepath.Join(peer(t, "@modelcontextprotocol/conformance"), "dist", "index.js")
	bin := goBuild(t, "./testdata/confclient")
	logs := t.TempDir()
	run := func(scenario string, direct bool) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", cli, "client", "--command", bin, "--scenario", scenario)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "BAILIFF_CONF_DIR="+logs)
		if direct {
			cmd.Env = append(cmd.Env, "BAILIFF_CONF_DIRECT=1")
		}
		out, _ := cmd.CombinedOutput()
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if m := oneLine.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
				return m[1] == m[2] && m[3] == "0"
			}
		}
		t.Fatalf("the suite reported nothing for client scenario %s:\n%s", scenario, out)
		return false
	}
	passed := 0
	for _, s := range conformanceClientScenarios {
		direct, through := run(s, true), run(s, false)
		t.Logf("client scenario %s: directly %v, through bailiff %v", s, direct, through)
		why, known := conformanceClientKnown[s]
		switch {
		case direct && !through && !known:
			t.Errorf("client scenario %s passes directly but fails with bailiff as the client", s)
		case known && through:
			t.Errorf("client scenario %s passes through bailiff now: take it off the known failures (%s)", s, why)
		}
		if through {
			passed++
		}
	}
	if passed == 0 {
		t.Error("no client scenario passed through bailiff: the run proves nothing")
	}
	found, _ := filepath.Glob(filepath.Join(logs, "*.audit.jsonl"))
	if len(found) != len(conformanceClientScenarios) {
		t.Errorf("%d logs for %d scenarios run through bailiff", len(found), len(conformanceClientScenarios))
	}
	for _, log := range found {
		if st, err := os.Stat(log); err == nil && st.Size() == 0 {
			continue // the suite's server refused before a session began
		}
		verifyClean(t, log, chain.OpenEvidence(chain.EvidenceDir(log)))
	}
}
