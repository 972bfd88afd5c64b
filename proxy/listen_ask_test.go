package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An ask to a client of gateway --listen that declared elicitation goes
// to it in band: at 2026-07-28 as the call's input_required result, which
// the Go SDK client answers and retries; at an older revision as
// elicitation/create on the client's session. Either way the log has the
// stdio shape: one call, one elicitation grant.

const listenAskPolicy = `version: 1
rules:
  - {id: echo-ok, server: go, tool: echo, action: allow}
  - {id: send-asks, server: go, tool: send, action: ask}
`

// connectAsking connects a Go SDK client at version that answers every
// elicitation as told (approve, decline, or fail: an error instead of an
// answer), and counts the questions.
func (l *listening) connectAsking(t *testing.T, version, answer string, asked *int) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		*asked++
		switch answer {
		case "decline":
			return &mcp.ElicitResult{Action: "decline"}, nil
		case "fail":
			return nil, errors.New("the human's terminal is gone")
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}}
	if version < revStateless {
		// Were it sent input_required, this client would get it back
		// unanswered: it must be asked with elicitation/create.
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "0"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: l.url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect over HTTP at %s: %v", version, err)
	}
	return cs
}

// rawCall posts one tools/call at 2026-07-28, as a client that can
// elicit, and returns its result.
func (l *listening) rawCall(t *testing.T, id int, text string, state any, approve bool) map[string]any {
	t.Helper()
	params := map[string]any{"name": "go.send", "arguments": map[string]any{"text": text}, "_meta": askMeta()}
	if state != nil {
		params["requestState"] = state
		params["inputResponses"] = map[string]any{stateInput: map[string]any{"action": "accept", "content": map[string]any{"approve": approve}}}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	req, err := http.NewRequest("POST", l.url, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "go.send")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				msg = []byte(d)
				break
			}
		}
	} else {
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			b.WriteString(sc.Text())
		}
		msg = []byte(b.String())
	}
	var m map[string]any
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatalf("tools/call %d: HTTP %d, %q: %v", id, resp.StatusCode, msg, err)
	}
	res, _ := m["result"].(map[string]any)
	if res == nil {
		t.Fatalf("tools/call %d: %v", id, m)
	}
	return res
}

// TestListenAsk: asks put to HTTP clients in band, approved and declined
// at 2026-07-28, approved through elicitation/create at 2025-11-25, and
// a forged and a replayed requestState refused naming which; one log of
// one session, which verifies.
func TestListenAsk(t *testing.T) {
	bin := sdkServer(t)
	ran := filepath.Join(t.TempDir(), "ran")
	l := startListening(t, listenAskPolicy, []Upstream{{Name: "go", Cmd: exec.Command(bin, "-ran", ran)}}, HTTPOptions{})
	for _, tc := range []struct {
		name, version, text, answer string
	}{
		{"approved", "2026-07-28", "a", "approve"},
		{"declined", "2026-07-28", "b", "decline"},
		{"approved through elicitation/create", "2025-11-25", "c", "approve"},
		{"elicitation/create unanswered", "2025-11-25", "f", "fail"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := 0
			cs := l.connectAsking(t, tc.version, tc.answer, &asked)
			defer cs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "go.send", Arguments: map[string]any{"text": tc.text}})
			if err != nil {
				t.Fatalf("go.send: %v", err)
			}
			if asked != 1 {
				t.Errorf("the human was asked %d times, want once", asked)
			}
			if tc.answer == "approve" && (r.IsError || text(r) != "sent") {
				t.Errorf("approved send: %v %q", r.IsError, text(r))
			}
			if tc.answer != "approve" && (!r.IsError || !strings.Contains(text(r), "declined by elicitation")) {
				t.Errorf("declined send: %v %q", r.IsError, text(r))
			}
		})
	}
	t.Run("raw requestState", func(t *testing.T) {
		refused := func(what string, res map[string]any, kind string) {
			t.Helper()
			if res["isError"] != true || !strings.Contains(resultText(res), "requestState "+kind) {
				t.Errorf("%s: %v, want a refusal naming a %s requestState", what, res, kind)
			}
		}
		refused("made-up state", l.rawCall(t, 1, "d", "made-up.state", true), "forged")
		st := inputRequired(t, l.rawCall(t, 2, "e", nil, false))
		if res := l.rawCall(t, 3, "e", st, true); res["isError"] == true || !strings.Contains(resultText(res), "sent") {
			t.Errorf("approved retry: %v", res)
		}
		refused("replayed state", l.rawCall(t, 4, "e", st, true), "replayed")
	})
	// The stateless requests share one session; each handshake client
	// has its own.
	rep := l.verify(t, 3)
	if b, _ := os.ReadFile(ran); string(b) != "a\nc\ne\n" {
		t.Errorf("the server ran %q, want only the approved calls", b)
	}
	var approvedN, declined int
	g := grantLines(t, l.log)
	for _, line := range g {
		if !strings.Contains(line, `"approver":"elicitation"`) {
			t.Errorf("a grant not by elicitation: %s", line)
		}
		switch {
		case strings.Contains(line, `"answer":"approve"`) && strings.Contains(line, `"verdict":"allow"`):
			approvedN++
		case strings.Contains(line, `"answer":"decline"`) && strings.Contains(line, `"verdict":"deny"`):
			declined++
		}
	}
	// A retry settles its ask and is no new call; a refused state is a
	// new call, declined.
	if approvedN != 3 || declined != 4 || rep.Calls != 7 {
		t.Errorf("%d approved and %d declined grants in %d calls, want 3, 4 and 7:\n%s", approvedN, declined, rep.Calls, strings.Join(g, "\n"))
	}
}
