package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/chain"
	"bailiff/engine"
)

// These tests run a real Go SDK server (testdata/sdkserver) behind the
// proxy and a real Go SDK client in front of it, at revision 2026-07-28
// (stateless: server/discover, no initialize, no initialized
// notification) and at 2025-11-25 (the handshake).

const sdkPolicy = `version: 1
rules:
  - {id: echo-ok, tool: echo, action: allow}
  - {id: ask-ok, tool: ask, action: allow}
  - {id: no-send, tool: send, action: deny}
`

const gatewaySDKPolicy = `version: 1
rules:
  - {id: echo-ok, server: go, tool: echo, action: allow}
  - {id: ask-ok, server: go, tool: ask, action: allow}
  - {id: no-send, server: go, tool: send, action: deny}
`

// sdkServer builds the Go SDK test server and returns its binary.
func sdkServer(t testing.TB) string {
	return goBuild(t, "./testdata/sdkserver")
}

// quickCall calls a tool with a deadline far below the minute the proxy
// once waited for an initialized notification, but generous: it fails
// only if the call waited on something that never comes.
func quickCall(t *testing.T, s *session, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v\nstderr:\n%s", name, err, s.stderr.String())
	}
	return res
}

// checkSDKSession makes the calls every revision must serve the same
// way: an allowed one returns the server's result, a denied one is
// refused naming its rule and never reaches the server, and the log
// verifies.
func checkSDKSession(t *testing.T, s *session, prefix, ran string, wantVersion string) {
	t.Helper()
	if got := s.cs.InitializeResult().ProtocolVersion; got != wantVersion {
		t.Errorf("negotiated %s, want %s", got, wantVersion)
	}
	r := quickCall(t, s, prefix+"echo", map[string]any{"text": "hi"})
	if r.IsError || text(r) != "echo: hi" {
		t.Errorf("echo: %v %q", r.IsError, text(r))
	}
	r = quickCall(t, s, prefix+"send", map[string]any{"text": "secret"})
	if !r.IsError || !strings.Contains(text(r), "rule no-send") {
		t.Errorf("send: %v %q, want a refusal naming rule no-send", r.IsError, text(r))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tools, err := s.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v\nstderr:\n%s", err, s.stderr.String())
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != prefix+"echo,"+prefix+"ask" && strings.Join(names, ",") != prefix+"ask,"+prefix+"echo" {
		t.Errorf("tools/list: %v, want echo and ask only", names)
	}
	rep := s.verify()
	if rep.Calls != 2 {
		t.Errorf("the log holds %d calls, want 2", rep.Calls)
	}
	if b, err := os.ReadFile(ran); err == nil {
		t.Errorf("a denied call reached the server: %q", b)
	}
}

// listens makes the client open subscriptions/listen under 2026-07-28
// (the SDK does when it has a list_changed handler and the server
// offers list_changed), which a gateway must answer.
func listens(o *mcp.ClientOptions) {
	o.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) {}
}

func TestGoSDKStateless(t *testing.T) {
	bin := sdkServer(t)
	ran := filepath.Join(t.TempDir(), "ran")
	s := start(t, setup{policy: sdkPolicy, server: "go", command: []string{bin, "-ran", ran}, version: "2026-07-28", client: listens})
	checkSDKSession(t, s, "", ran, "2026-07-28")
}

// TestGoSDKStatelessRelist: under 2026-07-28 the server announces a new
// tool with list_changed on the client's subscriptions/listen stream;
// bailiff re-lists (its own tools/list carrying the client's _meta),
// and the new tool becomes callable. Before that it is denied by
// pinning.
func TestGoSDKStatelessRelist(t *testing.T) {
	bin := sdkServer(t)
	changed := make(chan struct{}, 10)
	policy := sdkPolicy + `  - {id: grow-ok, tool: grow, action: allow}
  - {id: late-ok, tool: late, action: allow}
`
	s := start(t, setup{policy: policy, server: "go", command: []string{bin}, version: "2026-07-28",
		client: func(o *mcp.ClientOptions) {
			o.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }
		}})
	if r := quickCall(t, s, "late", nil); !r.IsError || !strings.Contains(text(r), "check pinning") {
		t.Errorf("late before it exists: %q, want a pinning refusal", text(r))
	}
	if r := quickCall(t, s, "grow", map[string]any{"text": "x"}); r.IsError {
		t.Fatalf("grow: %q", text(r))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatalf("no list_changed reached the client\nstderr:\n%s", s.stderr.String())
	}
	// The client heard of the change before bailiff's re-list has
	// finished (it is relayed at once): wait for the new pin to show.
	for {
		tools, err := s.cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		if slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "late" }) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("late was never re-pinned\nstderr:\n%s", s.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if r := quickCall(t, s, "late", map[string]any{"text": "x"}); r.IsError || text(r) != "late: x" {
		t.Errorf("late after list_changed: %v %q", r.IsError, text(r))
	}
	s.verify()
}

func TestGoSDKHandshake(t *testing.T) {
	bin := sdkServer(t)
	ran := filepath.Join(t.TempDir(), "ran")
	s := start(t, setup{policy: sdkPolicy, server: "go", command: []string{bin, "-ran", ran}, version: "2025-11-25"})
	checkSDKSession(t, s, "", ran, "2025-11-25")
}

// TestGoSDKInputRequired: a result that asks for more input
// (resultType input_required) is not a finished tool result: the call
// fails, closed, and the log says it never completed.
func TestGoSDKInputRequired(t *testing.T) {
	bin := sdkServer(t)
	s := start(t, setup{policy: sdkPolicy, server: "go", command: []string{bin}, version: "2026-07-28"})
	r := quickCall(t, s, "ask", map[string]any{"text": "x"})
	if !r.IsError || !strings.Contains(text(r), "input_required") {
		t.Errorf("ask: %v %q, want a refusal naming input_required", r.IsError, text(r))
	}
	s.verify()
	b, err := os.ReadFile(s.log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"kind":"result","call":"c1","server":"go","tool":"ask","status":"failed"`) {
		t.Errorf("the ask is not recorded as failed:\n%s", b)
	}
}

func TestGoSDKGateway(t *testing.T) {
	for _, tc := range []struct {
		name, client string
		serverArgs   []string
	}{
		{"stateless client", "2026-07-28", nil},
		{"handshake client", "2025-11-25", nil},
		{"stateless-only server", "2026-07-28", []string{"-only-stateless"}},
		{"handshake client, stateless-only server", "2025-11-25", []string{"-only-stateless"}},
		{"server refusing initialize", "2026-07-28", []string{"-only-stateless", "-refuse-initialize"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := sdkServer(t)
			ran := filepath.Join(t.TempDir(), "ran")
			args := append([]string{"-ran", ran}, tc.serverArgs...)
			s := start(t, setup{policy: gatewaySDKPolicy, server: "gateway", version: tc.client, client: listens,
				upstreams: []Upstream{{Name: "go", Cmd: exec.Command(bin, args...)}}})
			checkSDKSession(t, s, "go.", ran, tc.client)
		})
	}
}

// rawSession is the proxy between a test speaking raw JSON-RPC lines and
// the Go SDK server.
type rawSession struct {
	t    *testing.T
	w    io.WriteCloser
	r    *bufio.Scanner
	log  string
	ev   chain.Evidence
	done chan struct{}
}

func startRaw(t *testing.T, gateway bool) *rawSession {
	t.Helper()
	return startRawWith(t, gateway, sdkPolicy)
}

// startRawWith is startRaw with a policy of the test's own and arguments
// for the server (not in a gateway).
func startRawWith(t *testing.T, gateway bool, policy string, serverArgs ...string) *rawSession {
	t.Helper()
	bin := sdkServer(t)
	pol, err := engine.Load("test policy", []byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := chain.Open(logPath, chain.Sync)
	if err != nil {
		t.Fatal(err)
	}
	ev := chain.OpenEvidence(chain.EvidenceDir(logPath))
	opt := Options{Policy: pol, Log: w, Evidence: ev, Server: "go", Session: "raw", Stderr: io.Discard,
		CallTimeout: 30 * time.Second}
	clientR, proxyW := io.Pipe()
	proxyR, clientW := io.Pipe()
	rs := &rawSession{t: t, w: clientW, r: bufio.NewScanner(clientR), log: logPath, ev: ev, done: make(chan struct{})}
	rs.r.Buffer(nil, 1<<20)
	go func() {
		defer close(rs.done)
		if gateway {
			opt.Policy, _ = engine.Load("test policy", []byte(gatewaySDKPolicy))
			opt.Server = "gateway"
			RunGateway(context.Background(), opt, proxyR, proxyW, []Upstream{{Name: "go", Cmd: exec.Command(bin)}})
		} else {
			Run(context.Background(), opt, proxyR, proxyW, exec.Command(bin, serverArgs...))
		}
		proxyW.Close()
		w.Close()
	}()
	t.Cleanup(rs.close)
	return rs
}

func (rs *rawSession) close() {
	rs.w.Close()
	<-rs.done
}

// roundTrip sends one request and returns the response with its id,
// skipping notifications.
func (rs *rawSession) roundTrip(id int, method string, params any) map[string]any {
	rs.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := rs.w.Write(append(b, '\n')); err != nil {
		rs.t.Fatal(err)
	}
	got := make(chan map[string]any, 1)
	go func() {
		for rs.r.Scan() {
			var m map[string]any
			if json.Unmarshal(rs.r.Bytes(), &m) == nil && m["id"] == float64(id) {
				got <- m
				return
			}
		}
		got <- nil
	}()
	select {
	case m := <-got:
		if m == nil {
			rs.t.Fatalf("%s: the proxy closed without answering", method)
		}
		return m
	case <-time.After(20 * time.Second):
		rs.t.Fatalf("%s: no answer", method)
	}
	return nil
}

func stateless(extra map[string]any) map[string]any {
	meta := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "0"}}
	for k, v := range extra {
		meta[k] = v
	}
	return meta
}

func errorCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// TestStatelessMetaRequired: once a session speaks 2026-07-28, a request
// without the revision's _meta gets -32602 and a malformed record, in a
// proxy and a gateway alike; one with it is served.
func TestStatelessMetaRequired(t *testing.T) {
	for _, gateway := range []bool{false, true} {
		t.Run(fmt.Sprint("gateway=", gateway), func(t *testing.T) {
			rs := startRaw(t, gateway)
			prefix := ""
			if gateway {
				prefix = "go."
			}
			// server/discover without its _meta is refused outright.
			if m := rs.roundTrip(1, "server/discover", map[string]any{}); errorCode(m) != -32602 {
				t.Errorf("server/discover without _meta: %v, want -32602", m)
			}
			m := rs.roundTrip(2, "server/discover", map[string]any{"_meta": stateless(nil)})
			res, _ := m["result"].(map[string]any)
			if vs, _ := res["supportedVersions"].([]any); len(vs) == 0 || vs[0] != "2026-07-28" {
				t.Fatalf("server/discover: %v", m)
			}
			if m := rs.roundTrip(3, "tools/list", map[string]any{}); errorCode(m) != -32602 {
				t.Errorf("tools/list without _meta: %v, want -32602", m)
			}
			noCaps := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
			if m := rs.roundTrip(4, "tools/call", map[string]any{"name": prefix + "echo", "arguments": map[string]any{"text": "a"}, "_meta": noCaps}); errorCode(m) != -32602 {
				t.Errorf("tools/call without clientCapabilities: %v, want -32602", m)
			}
			if m := rs.roundTrip(5, "tools/call", map[string]any{"name": prefix + "echo", "arguments": map[string]any{"text": "a"}}); errorCode(m) != -32602 {
				t.Errorf("tools/call without _meta: %v, want -32602", m)
			}
			m = rs.roundTrip(6, "tools/call", map[string]any{"name": prefix + "echo", "arguments": map[string]any{"text": "ok"}, "_meta": stateless(nil)})
			res, _ = m["result"].(map[string]any)
			if b, _ := json.Marshal(res); res == nil || res["isError"] == true || !strings.Contains(string(b), "echo: ok") {
				t.Errorf("tools/call with _meta: %v", m)
			}
			rs.close()
			b, err := os.ReadFile(rs.log)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(b), `"kind":"malformed"`); n != 4 {
				t.Errorf("the log holds %d malformed records, want 4:\n%s", n, b)
			}
			if rep := verifyClean(t, rs.log, rs.ev); rep.Calls != 1 {
				t.Errorf("the log holds %d calls, want 1", rep.Calls)
			}
		})
	}
}

// TestStatelessCallFirst: a stateless client need not discover: its
// first message may be the call. The call starts the pin, whose own
// tools/list carries the client's _meta (the server knows nothing of
// the client but what each request says), and is served.
func TestStatelessCallFirst(t *testing.T) {
	rs := startRaw(t, false)
	m := rs.roundTrip(1, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "first"}, "_meta": stateless(nil)})
	res, _ := m["result"].(map[string]any)
	if b, _ := json.Marshal(res); res == nil || res["isError"] == true || !strings.Contains(string(b), "echo: first") {
		t.Errorf("tools/call as the first message: %v", m)
	}
	rs.close()
	if rep := verifyClean(t, rs.log, rs.ev); rep.Calls != 1 {
		t.Errorf("the log holds %d calls, want 1", rep.Calls)
	}
}

// TestGoSDKLatestClientOldServer: a Go SDK client offering 2026-07-28
// in front of a server of the handshake (the TypeScript reference
// server) asks server/discover, is refused, and falls back to
// initialize without the revision's _meta: the refused discover must
// not make the session stateless, nor start a pin the server cannot
// answer yet.
func TestGoSDKLatestClientOldServer(t *testing.T) {
	server := peer(t, "@modelcontextprotocol/server-memory/dist/index.js")
	policy := `version: 1
rules:
  - {id: read, tool: read_graph, action: allow}
  - {id: no-delete, tool: delete_entities, action: deny}
`
	s := start(t, setup{policy: policy, server: "memory", command: []string{"node", server},
		env: []string{"MEMORY_FILE_PATH=" + filepath.Join(t.TempDir(), "memory.jsonl")}, version: "2026-07-28", client: listens})
	if v := s.cs.InitializeResult().ProtocolVersion; v >= "2026-07-28" {
		t.Fatalf("negotiated %s with a server of the handshake", v)
	}
	if r := quickCall(t, s, "read_graph", nil); r.IsError {
		t.Errorf("read_graph: %q", text(r))
	}
	if r := quickCall(t, s, "delete_entities", map[string]any{"entityNames": []any{"x"}}); !r.IsError || !strings.Contains(text(r), "rule no-delete") {
		t.Errorf("delete_entities: %q, want a refusal naming rule no-delete", text(r))
	}
	s.verify()
}
