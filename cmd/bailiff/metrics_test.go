package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/chain"
	"bailiff/telemetry"
)

// startGateway starts `bailiff gateway --config config --listen
// 127.0.0.1:0` with args and env added, and reads its stderr until each
// of markers has been said: it returns what follows each on its line,
// every line said until then, and what stops it with SIGINT.
func startGateway(t *testing.T, config string, env, args []string, markers ...string) (found map[string]string, said []string, stop func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"gateway", "--config", config, "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(append(os.Environ(), childEnv+"=1", "USER=tester"), env...)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	found = map[string]string{}
	lines := bufio.NewScanner(errPipe)
	for len(found) < len(markers) && lines.Scan() {
		said = append(said, lines.Text())
		for _, m := range markers {
			if _, after, ok := strings.Cut(lines.Text(), m); ok {
				found[m] = after
			}
		}
	}
	if len(found) < len(markers) {
		t.Fatalf("gateway did not say %q:\n%s", markers, strings.Join(said, "\n"))
	}
	go io.Copy(io.Discard, errPipe)
	return found, said, func() {
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("gateway after SIGINT: %v", err)
		}
	}
}

// startMetered starts `bailiff gateway --listen --metrics` on config and
// returns the MCP URL and the metrics URL.
func startMetered(t *testing.T, config string) (mcpURL, metricsURL string, stop func()) {
	t.Helper()
	found, _, stop := startGateway(t, config, nil, []string{"--metrics", "127.0.0.1:0"}, "serving Streamable HTTP at ", "metrics at ")
	return found["serving Streamable HTTP at "], found["metrics at "], stop
}

func meteredConfig(t *testing.T, dir, policy string, serverArgs ...string) (config, audit string) {
	t.Helper()
	server := sdkServer(t, dir)
	audit = filepath.Join(dir, "audit.jsonl")
	args := ""
	if len(serverArgs) > 0 {
		args = "\n    args: [" + strings.Join(serverArgs, ", ") + "]"
	}
	// An approver key, so an ask waits in the state database.
	key := filepath.Join(dir, "approver")
	var out strings.Builder
	if code := run([]string{"keygen", "--approver", "ana", "-o", key}, nil, &out, &out); code != 0 {
		t.Fatalf("keygen: %s", out.String())
	}
	config = writeTestFile(t, dir, "gateway.yaml", fmt.Sprintf(`policy: %s
audit: %s
state: %s
approver_keys: [%s.pub]
principal: {subject: tester}
servers:
  go:
    command: %s%s
`, writeTestFile(t, dir, "policy.yaml", policy), audit, filepath.Join(dir, "state.db"), key, server, args))
	return config, audit
}

// scrape reads the metrics' samples: each series (name and labels, as
// written) with its value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("a sample that is no number: %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// connect opens a session of a revision before input requests, with no
// elicitation: an ask waits in the state database for a human.
func connect(t *testing.T, ctx context.Context, url string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "metrics-test", Version: "0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

var decisionSeries = regexp.MustCompile(`^bailiff_decisions_total\{check="([^"]*)",server="([^"]*)",tool="([^"]*)",verdict="([^"]*)"\}$`)

// TestMetricsMatchTheLog: scraped during a session, the decision counters
// are the log's call records, verdict, check, server and tool; the asks
// waiting, the upstream round trips and the audit writes are counted too.
func TestMetricsMatchTheLog(t *testing.T) {
	dir := t.TempDir()
	config, audit := meteredConfig(t, dir, `version: 1
rules:
  - {id: echo, server: go, tool: echo, action: allow}
  - {id: no-send, server: go, tool: send, action: deny}
  - {id: grow, server: go, tool: grow, action: ask}
`)
	mcpURL, metricsURL, stop := startMetered(t, config)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := connect(t, ctx, mcpURL)
	calls := []string{"go.echo", "go.send", "go.echo", "go.grow", "go.nope", "go.echo", "go.send"}
	for _, name := range calls {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "x"}}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	got := scrape(t, metricsURL) // the session is still open
	want := map[string]float64{}
	for _, rec := range records(t, audit) {
		if rec.Kind != chain.KindCall {
			continue
		}
		v, check, server, tool := field(rec.Body, "verdict"), field(rec.Body, "check"), field(rec.Body, "server"), field(rec.Body, "tool")
		if check == "pinning" {
			tool = telemetry.Unpinned
		}
		want[fmt.Sprintf(`bailiff_decisions_total{check=%q,server=%q,tool=%q,verdict=%q}`, check, server, tool, v)]++
	}
	decisions := map[string]float64{}
	for series, v := range got {
		if decisionSeries.MatchString(series) {
			decisions[series] = v
		}
	}
	if len(want) != 4 || fmt.Sprint(decisions) != fmt.Sprint(want) {
		t.Errorf("decisions scraped:\n%v\nthe log's call records:\n%v", decisions, want)
	}
	forwarded := want[`bailiff_decisions_total{check="rules",server="go",tool="echo",verdict="allow"}`]
	// What the gateway observes after it answered (the round trip, the
	// time it added to an allowed call) may reach the metrics just after
	// the client read its answer.
	for deadline := time.Now().Add(5 * time.Second); got[`bailiff_added_seconds_count{server="go",verdict="allow"}`] < forwarded && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		got = scrape(t, metricsURL)
	}
	for series, v := range map[string]float64{
		`bailiff_pending_asks`: 1,
		`bailiff_upstream_seconds_count{outcome="answered",server="go"}`: forwarded,
		`bailiff_added_seconds_count{server="go",verdict="allow"}`:       forwarded,
		`bailiff_added_seconds_count{server="go",verdict="deny"}`:        3,
		`bailiff_audit_write_errors_total`:                               0,
	} {
		if got[series] != v {
			t.Errorf("%s = %v, want %v", series, got[series], v)
		}
	}
	if got[`bailiff_audit_write_seconds_count`] < float64(len(calls)) {
		t.Errorf("audit writes counted: %v, for %d calls at least", got[`bailiff_audit_write_seconds_count`], len(calls))
	}
	cs.Close()
	stop()
}

// field is a top-level string field of a record's body.
func field(body []byte, key string) string {
	raw, ok := chain.RawField(body, key)
	if !ok {
		return ""
	}
	s, _ := strconv.Unquote(string(raw))
	return s
}

// TestMetricsBoundedSeries: a malicious server's thousand random tool
// names, each called, make at most MaxToolsPerServer tool series and one
// for the rest; every call is still counted.
func TestMetricsBoundedSeries(t *testing.T) {
	dir := t.TempDir()
	config, _ := meteredConfig(t, dir, `version: 1
rules:
  - {id: any, server: go, tool: "*", action: allow}
`, "-random-tools", "1000")
	mcpURL, metricsURL, stop := startMetered(t, config)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cs := connect(t, ctx, mcpURL)
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(tool.Name, "go.r") {
			names = append(names, tool.Name)
		}
	}
	if len(names) != 1000 {
		t.Fatalf("the server lists %d random tools, want 1000", len(names))
	}
	for _, name := range names {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "x"}}); err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
	}
	series, total, other := 0, 0.0, 0.0
	for s, v := range scrape(t, metricsURL) {
		m := decisionSeries.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		series++
		total += v
		if m[3] == telemetry.Other {
			other = v
		}
	}
	if series > telemetry.MaxToolsPerServer+1 || total != 1000 || other != float64(1000-telemetry.MaxToolsPerServer) {
		t.Errorf("1000 random tools called: %d series (at most %d), %v calls counted, %v under %s", series, telemetry.MaxToolsPerServer+1, total, other, telemetry.Other)
	}
	cs.Close()
	stop()
}
