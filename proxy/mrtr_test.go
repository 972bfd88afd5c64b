package proxy

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/chain"
	"bailiff/engine"
)

// An ask in a session of revision 2026-07-28 goes to the human as the
// call's own input_required result; the Go SDK client answers it with
// its ElicitationHandler and retries. These run the real SDK client and
// server on both sides of the proxy.

const askPolicy = `version: 1
rules:
  - {id: echo-ok, tool: echo, action: allow}
  - {id: send-asks, tool: send, action: ask}
`

// grantLines are the log's grant records without their timestamps and
// chain fields: what must not depend on how the human was asked.
func grantLines(t *testing.T, log string) []string {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	rd := chain.NewReader(f)
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		if rec.Kind == chain.KindGrant {
			out = append(out, regexp.MustCompile(`"expires":"[^"]*"`).ReplaceAllString(string(rec.Body), `"expires":"…"`))
		}
	}
	return out
}

func TestGoSDKStatelessAsk(t *testing.T) {
	bin := sdkServer(t)
	grants := map[string][]string{}
	for _, tc := range []struct {
		name, version string
		approve       bool
	}{
		{"approved", "2026-07-28", true},
		{"declined", "2026-07-28", false},
		{"approved through elicitation/create", "2025-11-25", true},
		{"declined through elicitation/create", "2025-11-25", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := filepath.Join(t.TempDir(), "ran")
			var asked []string
			s := start(t, setup{policy: askPolicy, server: "go", command: []string{bin, "-ran", ran}, version: tc.version,
				elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, r.Params.Message)
					if !tc.approve {
						return &mcp.ElicitResult{Action: "decline"}, nil
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				},
				client: func(o *mcp.ClientOptions) {
					if tc.version < revStateless {
						// An older client is asked with elicitation/create:
						// were it sent input_required, this client would
						// get it back unanswered.
						o.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
					}
				}})
			r := quickCall(t, s, "send", map[string]any{"text": "hello"})
			if len(asked) != 1 {
				t.Fatalf("the human was asked %d times, want once", len(asked))
			}
			digest := engine.ArgsDigest(map[string]any{"text": "hello"})
			if !strings.Contains(asked[0], `"send"`) || !strings.Contains(asked[0], digest) || !strings.Contains(asked[0], "send-asks") {
				t.Errorf("the question does not name the tool, the digest and the rule: %q", asked[0])
			}
			b, _ := os.ReadFile(ran)
			if tc.approve {
				if r.IsError || text(r) != "sent" || string(b) != "hello\n" {
					t.Errorf("approved send: %v %q, server ran %q", r.IsError, text(r), b)
				}
			} else {
				if !r.IsError || !strings.Contains(text(r), "declined by elicitation") || len(b) != 0 {
					t.Errorf("declined send: %v %q, server ran %q", r.IsError, text(r), b)
				}
			}
			rep := s.verify()
			if rep.Calls != 1 {
				t.Errorf("the log holds %d calls, want 1 (a retry settles its ask, it is no new call)", rep.Calls)
			}
			g := grantLines(t, s.log)
			if len(g) != 1 || !strings.Contains(g[0], `"approver":"elicitation"`) {
				t.Errorf("grants: %v, want one by elicitation", g)
			}
			grants[tc.name] = g
		})
	}
	for _, pair := range [][2]string{{"approved", "approved through elicitation/create"}, {"declined", "declined through elicitation/create"}} {
		if a, b := strings.Join(grants[pair[0]], "\n"), strings.Join(grants[pair[1]], "\n"); a != b {
			t.Errorf("the grant records differ with the way of asking:\n%s\n%s", a, b)
		}
	}
}

// askMeta is a raw client's _meta of a client that can elicit.
func askMeta() map[string]any {
	return map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "0"}}
}

func rawSend(rs *rawSession, id int, text string, state any, approve bool) map[string]any {
	params := map[string]any{"name": "send", "arguments": map[string]any{"text": text}, "_meta": askMeta()}
	if state != nil {
		params["requestState"] = state
		params["inputResponses"] = map[string]any{stateInput: map[string]any{"action": "accept", "content": map[string]any{"approve": approve}}}
	}
	m := rs.roundTrip(id, "tools/call", params)
	res, _ := m["result"].(map[string]any)
	if res == nil {
		rs.t.Fatalf("tools/call send: %v", m)
	}
	return res
}

func resultText(res map[string]any) string {
	b, _ := json.Marshal(res["content"])
	return string(b)
}

// inputRequired reads the state of an input_required answer.
func inputRequired(t *testing.T, res map[string]any) string {
	t.Helper()
	reqs, _ := res["inputRequests"].(map[string]any)
	q, _ := reqs[stateInput].(map[string]any)
	st, _ := res["requestState"].(string)
	if res["resultType"] != "input_required" || q["method"] != "elicitation/create" || st == "" {
		t.Fatalf("want an input_required answer with an elicitation and a state: %v", res)
	}
	return st
}

// TestStatelessAskState: a requestState approves only the ask it was
// issued for, once. A made-up state, one edited, one issued for other
// arguments and one used before are all refused, saying which, and each
// refusal is recorded as a declined answer that verify recomputes.
func TestStatelessAskState(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	rs := startRawWith(t, false, askPolicy, "-ran", ran)
	id := 0
	next := func() int { id++; return id }
	refused := func(what string, res map[string]any, kind string) {
		t.Helper()
		if res["isError"] != true || !strings.Contains(resultText(res), "requestState "+kind) {
			t.Errorf("%s: %v, want a refusal naming a %s requestState", what, res, kind)
		}
	}

	st := inputRequired(t, rawSend(rs, next(), "a", nil, false))
	refused("made-up state", rawSend(rs, next(), "a", "made-up", true), "forged")
	payload, mac, _ := strings.Cut(st, ".")
	edited := payload[:len(payload)-2] + "xy" + "." + mac
	refused("edited state", rawSend(rs, next(), "a", edited, true), "forged")
	refused("state of another call", rawSend(rs, next(), "b", st, true), "altered")
	// The state was tried, with its MAC intact: it is spent.
	refused("state of another call, retried on its own call", rawSend(rs, next(), "a", st, true), "replayed")

	st = inputRequired(t, rawSend(rs, next(), "c", nil, false))
	if res := rawSend(rs, next(), "c", st, true); res["isError"] == true || !strings.Contains(resultText(res), "sent") {
		t.Errorf("approved retry: %v", res)
	}
	refused("replayed state", rawSend(rs, next(), "c", st, true), "replayed")
	refused("non-string state", rawSend(rs, next(), "c", 7, true), "forged")

	rs.close()
	if b, _ := os.ReadFile(ran); string(b) != "c\n" {
		t.Errorf("the server ran %q, want only the approved call", b)
	}
	rep := verifyClean(t, rs.log, rs.ev)
	g := grantLines(t, rs.log)
	var declined, approvedN int
	for _, l := range g {
		switch {
		case strings.Contains(l, `"answer":"decline"`) && strings.Contains(l, `"verdict":"deny"`):
			declined++
		case strings.Contains(l, `"answer":"approve"`) && strings.Contains(l, `"verdict":"allow"`):
			approvedN++
		}
	}
	// Six refused retries are six calls, each declined; the two asks and
	// the approved retry's ask make the rest.
	if declined != 6 || approvedN != 1 || rep.Calls != 8 {
		t.Errorf("%d declined and %d approved grants in %d calls, want 6, 1 and 8:\n%s", declined, approvedN, rep.Calls, strings.Join(g, "\n"))
	}
}

// stateProxy is just enough of a proxy to issue and take states.
func stateProxy(now *time.Time) *Proxy {
	return &Proxy{opt: Options{Session: "s1", AskTimeout: time.Minute, Now: func() time.Time { return *now }}, stateSecret: newStateSecret()}
}

func TestStateExpires(t *testing.T) {
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	p := stateProxy(&now)
	c := &engine.Call{ID: "c1", ToolRef: engine.ToolRef{Server: "go", Tool: "send"}, Digest: "sha256:aa"}
	st := p.issueState(c, engine.Decision{Verdict: engine.Ask})
	now = now.Add(time.Minute)
	if _, err := p.takeState(st, c); err == nil || err.(*stateError).Kind != "expired" {
		t.Errorf("a state past its expiry: %v, want expired", err)
	}
	// Issued by another process (another secret): forged, whatever it says.
	q := stateProxy(&now)
	st = q.issueState(c, engine.Decision{Verdict: engine.Ask})
	if _, err := p.takeState(st, c); err == nil || err.(*stateError).Kind != "forged" {
		t.Errorf("a state of another process: %v, want forged", err)
	}
	// Another session of the same process.
	q.stateSecret, q.opt.Session = p.stateSecret, "s2"
	st = q.issueState(c, engine.Decision{Verdict: engine.Ask})
	if _, err := p.takeState(st, c); err == nil || err.(*stateError).Kind != "forged" {
		t.Errorf("a state of another session: %v, want forged (no ask of this session has it)", err)
	}
	st = p.issueState(c, engine.Decision{Verdict: engine.Ask})
	if pend, err := p.takeState(st, c); err != nil || pend.call != c {
		t.Errorf("a fresh state: %v", err)
	}
}

// FuzzRequestState: no state panics the reader, and none is accepted
// but one bailiff issued.
func FuzzRequestState(f *testing.F) {
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	p := stateProxy(&now)
	c := &engine.Call{ID: "c1", ToolRef: engine.ToolRef{Server: "go", Tool: "send"}, Digest: "sha256:aa"}
	issued := map[string]bool{}
	for i := 0; i < 3; i++ {
		st := p.issueState(c, engine.Decision{Verdict: engine.Ask})
		issued[st] = true
		f.Add(st)
	}
	f.Add("")
	f.Add(".")
	f.Add("e30.AAAA")
	f.Fuzz(func(t *testing.T, raw string) {
		if _, err := openState(p.stateSecret, raw); err == nil && !issued[raw] {
			t.Fatalf("accepted a state bailiff never issued: %q", raw)
		}
		if _, err := p.takeState(raw, c); err == nil && !issued[raw] {
			t.Fatalf("took a state bailiff never issued: %q", raw)
		}
	})
}

// TestGoSDKStatelessAskWire: what the SDK client reads when it does not
// answer by itself: an input_required result holding bailiff's
// elicitation, as the SDK's own types read it. Unanswered, the ask stays
// open, and nothing reaches the server.
func TestGoSDKStatelessAskWire(t *testing.T) {
	bin := sdkServer(t)
	ran := filepath.Join(t.TempDir(), "ran")
	s := start(t, setup{policy: askPolicy, server: "go", command: []string{bin, "-ran", ran}, version: "2026-07-28",
		elicit: func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, errors.New("not asked here") },
		client: func(o *mcp.ClientOptions) { o.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true} }})
	r := quickCall(t, s, "send", map[string]any{"text": "x"})
	q, ok := r.InputRequests[stateInput].(*mcp.ElicitParams)
	if !r.NeedsInput() || !ok || r.RequestState == "" || len(r.Content) != 0 {
		t.Fatalf("want input_required with bailiff's elicitation and a state: %+v", r)
	}
	schema, _ := json.Marshal(q.RequestedSchema)
	if !strings.Contains(string(schema), `"approve":{"description":"Allow this call once","title":"Approve","type":"boolean"}`) {
		t.Errorf("schema %s", schema)
	}
	if rep := s.verify(); rep.Calls != 1 {
		t.Errorf("the log holds %d calls, want 1", rep.Calls)
	}
	if b, err := os.ReadFile(ran); err == nil {
		t.Errorf("an unanswered ask reached the server: %q", b)
	}
}

// TestGoSDKGatewayStatelessAsk: a gateway asks a stateless client the
// same way, and the retry reaches the server it routes to.
func TestGoSDKGatewayStatelessAsk(t *testing.T) {
	bin := sdkServer(t)
	ran := filepath.Join(t.TempDir(), "ran")
	s := start(t, setup{policy: "version: 1\nrules:\n  - {id: send-asks, server: go, tool: send, action: ask}\n", server: "gateway", version: "2026-07-28",
		upstreams: []Upstream{{Name: "go", Cmd: exec.Command(bin, "-ran", ran)}},
		elicit: func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		}})
	if r := quickCall(t, s, "go.send", map[string]any{"text": "hello"}); r.IsError || text(r) != "sent" {
		t.Errorf("approved send: %v %q", r.IsError, text(r))
	}
	if rep := s.verify(); rep.Calls != 1 {
		t.Errorf("the log holds %d calls, want 1", rep.Calls)
	}
	if b, _ := os.ReadFile(ran); string(b) != "hello\n" {
		t.Errorf("the server ran %q", b)
	}
}
