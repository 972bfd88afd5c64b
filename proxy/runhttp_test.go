package proxy

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// everythingServer builds the Go SDK's conformance server (the one the
// official conformance suite is run against) and returns its binary.
func everythingServer(t testing.TB) string {
	return goBuild(t, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
}

// goBuild builds a command of the module (or one it requires) into a
// directory of the test's and returns its binary.
func goBuild(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// initRequest opens a session at the handshake revision.
const initRequest = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"0"}}}`

const relayPolicy = `version: 1
rules:
  - {id: no-errors, tool: test_error_handling, action: deny}
  - {id: rest, tool: "*", action: allow}
`

// startRelay serves up behind `run --listen`.
func startRelay(t *testing.T, policy string, up Upstream, hopt HTTPOptions) *listening {
	t.Helper()
	return startServing(t, policy, func(ctx context.Context, opt Options, ln net.Listener) error {
		return ServeRunHTTP(ctx, opt, ln, up, hopt)
	}, func(o *Options, _ string) { o.Server = up.Name })
}

// relayClient connects at version without the standalone stream, so
// that whatever reaches it during a call came on the call's own stream.
func relayClient(t *testing.T, url, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "relay-client", Version: "0"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %s: %v", version, err)
	}
	return cs
}

// TestRunListenRelatesToItsRequest: what a server sends during a call
// (progress, log messages, a sampling request) reaches the client on
// that call's stream, though the server said
// nothing over stdio of which call it belonged to. The client here has
// no standalone stream: sent anywhere else, nothing would arrive.
func TestRunListenRelatesToItsRequest(t *testing.T) {
	l := startRelay(t, relayPolicy, Upstream{Name: "everything", Cmd: exec.Command(everythingServer(t))}, HTTPOptions{})
	var mu sync.Mutex
	var progress, logs []string
	sampled := 0
	cs := relayClient(t, l.url, "2025-11-25", &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, r.Params.Message)
		},
		//lint:ignore SA1019 the handshake revisions still carry sampling and logging, and the relay must pass them
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, r.Params.Data.(string))
		},
		//lint:ignore SA1019 the handshake revisions still carry sampling and logging, and the relay must pass them
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			defer mu.Unlock()
			sampled++
			//lint:ignore SA1019 the handshake revisions still carry sampling and logging, and the relay must pass them
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "sampled: " + r.Params.Messages[0].Content.(*mcp.TextContent).Text}}, nil
		},
	})
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	params := &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	// The client may hand the answer to its caller before it has run
	// the handler of a notification that came just before it.
	arrived := func(what *[]string, n int) []string {
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			got := append([]string(nil), (*what)...)
			mu.Unlock()
			if len(got) >= n || time.Now().After(deadline) {
				return got
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if got := arrived(&progress, 3); len(got) != 3 || res.Content[0].(*mcp.TextContent).Text != "tok-1" {
		t.Errorf("progress: %q, answer %+v; want 3 notifications and the token", got, res.Content[0])
	}

	//lint:ignore SA1019 the handshake revisions still carry sampling and logging, and the relay must pass them
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_logging", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if got := arrived(&logs, 3); len(got) != 3 || got[0] != "Tool execution started" {
		t.Errorf("log messages: %q, want the tool's three", got)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; sampled != 1 || !strings.Contains(text, "sampled: hello") {
		t.Errorf("sampling: asked %d times, the tool answered %q", sampled, text)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_error_handling", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "no-errors") {
		t.Errorf("a denied call: %q (isError %v), want the refusal naming rule no-errors", text, res.IsError)
	}
	cs.Close()
	rep := l.verify(t, 1)
	if rep.Calls != 4 {
		t.Errorf("verify counted %d calls, want 4", rep.Calls)
	}
}

// TestRunListenNamesAndRevisions: the server's own tool, resource and
// prompt names reach the client unchanged, at every revision: the
// handshake's through a relay session (the server's own initialize
// answer), 2026-07-28's as stateless requests (bailiff's own discover
// answer, the server behind it unprefixed).
func TestRunListenNamesAndRevisions(t *testing.T) {
	l := startRelay(t, relayPolicy, Upstream{Name: "everything", Cmd: exec.Command(everythingServer(t))}, HTTPOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, version := range []string{"2026-07-28", "2025-06-18", "2025-03-26"} {
		cs := relayClient(t, l.url, version, nil)
		if v := cs.InitializeResult().ProtocolVersion; v != version {
			t.Errorf("asked for %s, the session is of %s", version, v)
		}
		if info := cs.InitializeResult().ServerInfo; version < revStateless && info.Name != "mcp-conformance-test-server" {
			t.Errorf("serverInfo %+v: the server's, not bailiff's, must reach the client", info)
		}
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !hasTool(tools.Tools, "test_simple_text") {
			t.Errorf("tools/list at %s does not hold test_simple_text under its own name", version)
		}
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_simple_prompt"}); err != nil {
			t.Errorf("prompts/get at %s: %v", version, err)
		}
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
		if err != nil || len(r.Contents) != 1 || r.Contents[0].Text == "" {
			t.Errorf("resources/read at %s: %v %+v", version, err, r)
		}
		cs.Close()
	}
	l.verify(t, 3) // two handshake sessions, and the stateless requests' one
}

func hasTool(tools []*mcp.Tool, name string) bool {
	for _, tool := range tools {
		if tool.Name == name {
			return true
		}
	}
	return false
}

// TestRunListenRefusals: the HTTP limits of gateway --listen hold for
// run --listen too, and each refusal says why.
func TestRunListenRefusals(t *testing.T) {
	l := startRelay(t, relayPolicy, Upstream{Name: "everything", Cmd: exec.Command(everythingServer(t))}, HTTPOptions{MaxSessions: 1, MaxServerSessions: 1})
	for _, c := range []struct {
		name   string
		body   string
		header map[string]string
		status int
		says   string
	}{
		{"a page elsewhere", initRequest, map[string]string{"Origin": "https://evil.example"}, 403, `Origin "https://evil.example" is not on this machine`},
		{"DNS rebinding", initRequest, map[string]string{"Host": "evil.example:80"}, 403, `invalid Host header "evil.example:80"`},
		{"an unknown revision", initRequest, map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, 400, "Unsupported protocol version"},
		{"a batch", "[" + initRequest + "]", map[string]string{"Mcp-Protocol-Version": "2025-06-18"}, 400, "batching is not supported"},
		{"not JSON", initRequest, map[string]string{"Content-Type": "text/plain"}, 415, "Content-Type must be 'application/json'"},
		{"no event stream accepted", initRequest, map[string]string{"Accept": "application/json"}, 400, "Accept must contain both"},
		{"a session nobody opened", initRequest, map[string]string{"Mcp-Session-Id": "NOPE"}, 404, "session not found"},
	} {
		resp, body := postTo(t, l.url, c.body, c.header)
		if resp.StatusCode != c.status || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %q, want %d saying %q", c.name, resp.StatusCode, body, c.status, c.says)
		}
	}
	resp, _ := postTo(t, l.url, initRequest, nil)
	first := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || first == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, first)
	}
	resp, body := postTo(t, l.url, strings.Replace(initRequest, `"id":1`, `"id":2`, 1), nil)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "session cap") {
		t.Errorf("a second session past --max-sessions 1: %d %q, want 503 naming the cap", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, l.url, nil)
	req.Header.Set("Mcp-Session-Id", first)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 204 {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if resp, _ := postTo(t, l.url, strings.Replace(initRequest, `"id":1`, `"id":3`, 1), nil); resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session ended by DELETE never freed its place")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRunListenServerGone: a session whose server stopped is told so at
// every request, never opened again clean behind its client's back.
func TestRunListenServerGone(t *testing.T) {
	dir := t.TempDir()
	// A server that answers initialize, then exits.
	script := filepath.Join(dir, "once.sh")
	reply := `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"once","version":"0"}}}`
	if err := os.WriteFile(script, []byte("#!/bin/sh\nread line\necho '"+reply+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := startRelay(t, relayPolicy, Upstream{Name: "once", Cmd: exec.Command(script)}, HTTPOptions{})
	resp, _ := postTo(t, l.url, initRequest, nil)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("initialize: %d %q", resp.StatusCode, id)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, body := postTo(t, l.url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": id})
		status := resp.StatusCode
		if status == http.StatusGone {
			var resp struct {
				ID    int `json:"id"`
				Error struct{ Message string }
			}
			if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.ID != 2 || !strings.Contains(resp.Error.Message, "this session has ended") {
				t.Errorf("410 body %q: want a JSON-RPC error for id 2 saying the session ended", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the server exited, a request got %d %q, want 410", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// postTo posts body to url with the headers a Streamable HTTP client sends.
func postTo(t *testing.T, url, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v // not a header to net/http
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestRunListenCapCountsEndingSessions: --max-sessions bounds the
// servers too, so a session ended by DELETE counts until its server has
// stopped (one that ignores its stdin closing and SIGINT is killed 7 s
// later): opening and deleting sessions in a loop never runs two at once.
func TestRunListenCapCountsEndingSessions(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "srv.sh")
	started := filepath.Join(dir, "started")
	src := "#!/bin/sh\ntrap '' INT TERM\necho $$ >> " + started + "\nread line\n" +
		`printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}'` +
		"\nexec sleep 60\n"
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	l := startRelay(t, relayPolicy, Upstream{Name: "slow", Cmd: exec.Command(script)}, HTTPOptions{MaxSessions: 1, MaxServerSessions: 1, NoInitRate: true})
	for i := 0; i < 5; i++ {
		resp, body := postTo(t, l.url, initRequest, nil)
		id := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != 200 || id == "" {
			t.Logf("round %d: %d %q", i, resp.StatusCode, body)
			break
		}
		req, _ := http.NewRequest(http.MethodDelete, l.url, nil)
		req.Header.Set("Mcp-Session-Id", id)
		if r, err := http.DefaultClient.Do(req); err == nil {
			r.Body.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := os.ReadFile(started)
	alive := 0
	for _, f := range strings.Fields(string(b)) {
		pid, _ := strconv.Atoi(f)
		if pid > 0 && syscall.Kill(pid, 0) == nil {
			alive++
		}
	}
	if alive > 1 {
		t.Errorf("%d servers running at once behind run --listen --max-sessions 1", alive)
	}
}

// TestRunListenServerNeverStarts: a server command that cannot be found
// is refused at start; one that exits before answering answers the
// client's initialize with an error naming why, never an empty stream.
func TestRunListenServerNeverStarts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	missing := filepath.Join(t.TempDir(), "no-such-server")
	if err := ServeRunHTTP(t.Context(), Options{}, ln, Upstream{Name: "x", Cmd: exec.Command(missing)}, HTTPOptions{}); err == nil || !strings.Contains(err.Error(), "no-such-server") {
		t.Errorf("a server command that does not exist: %v, want refused at start naming it", err)
	}
	l := startRelay(t, relayPolicy, Upstream{Name: "gone", Cmd: exec.Command("sh", "-c", "exit 3")}, HTTPOptions{})
	resp, body := postTo(t, l.url, initRequest, nil)
	if !strings.Contains(body, `"id":1`) || !strings.Contains(body, "this session has ended") {
		t.Errorf("initialize of a session whose server exited: %d %q, want a JSON-RPC error for id 1 saying the session ended", resp.StatusCode, body)
	}
}
