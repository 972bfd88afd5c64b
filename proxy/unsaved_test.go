package proxy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/audit"
	"bailiff/state"
)

const unsavedPolicy = `version: 1
rules:
  - {id: send, tool: send, action: ACTION}
tenants:
  "*": {ceiling: 100, window: 87840h}
`

// TestUnsavedNotForwarded: behind the real proxy and the Go SDK test
// server, a call decided and recorded whose change to the shared
// counters then cannot be saved is never forwarded (the server's send
// never runs): the client is refused, the call is closed as failed, and
// the log verifies. The same for a call a human approved through
// elicitation, whose answer's step cannot be saved.
func TestUnsavedNotForwarded(t *testing.T) {
	bin := sdkServer(t)
	for _, tc := range []struct {
		name, action string
		failSave     int // an ask's own step saves first
	}{
		{"allowed", "allow", 1},
		{"approved in band", "ask", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ran := filepath.Join(t.TempDir(), "ran")
			asked := 0
			s := start(t, setup{policy: strings.Replace(unsavedPolicy, "ACTION", tc.action, 1), server: "go", command: []string{bin, "-ran", ran},
				ledger: audit.NewStoredLedger(&downCounters{Counters: Counters{Store: st}, failSave: tc.failSave}),
				elicit: func(*mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				}})
			r := quickCall(t, s, "send", map[string]any{"text": "hello"})
			if !r.IsError || !strings.Contains(text(r), "the tenant counters cannot be read or kept") || strings.Contains(text(r), "hello") {
				t.Fatalf("the call whose step was not saved: %v %q", r.IsError, text(r))
			}
			if b, _ := os.ReadFile(ran); len(b) != 0 {
				t.Fatalf("the server ran the call: %q", b)
			}
			if tc.action == "ask" && asked != 1 {
				t.Fatalf("the human was asked %d times, want once", asked)
			}
			b, _ := os.ReadFile(s.log)
			if !strings.Contains(string(b), `"kind":"result","call":"c1"`) || !strings.Contains(string(b), `"status":"failed"`) {
				t.Errorf("the call was not closed as failed:\n%s", b)
			}
			if rep := s.verify(); len(rep.Findings) != 0 {
				t.Errorf("findings: %+v", rep.Findings)
			}
		})
	}
}
