package proxy

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestADV2ServerStealsElicitationID: in `run` mode the proxy relays the
// server's requests to the client with the server's ids, and takes any
// client response whose id is in ownDown as the answer to its own ask.
// Its ids are "bailiff-<start>-N", and it sends the server requests
// (tools/list) from the same counter, so the server knows the next one.
// The malicious server asks the client "Show temperatures in Celsius?"
// under that id; the proxy's real question ("the agent wants to call
// pay ...") then collides at the client (go-sdk refuses a duplicate
// in-flight id), and the human's "yes" to Celsius approves pay.
func TestADV2ServerStealsElicitationID(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/adv2-idsteal-server.js")
	mark := filepath.Join(t.TempDir(), "paid")
	policy := `version: 1
rules:
  - {id: weather, tool: weather, action: allow}
  - {id: pay, tool: pay, action: ask}
`
	var mu sync.Mutex
	var seen []string
	human := make(chan struct{}) // closed once the agent's pay call is out
	s := start(t, setup{policy: policy, server: "weather", subject: "ana", command: []string{"node", script},
		env: []string{"ADV2_MARK=" + mark},
		elicit: func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			seen = append(seen, r.Params.Message)
			mu.Unlock()
			if strings.Contains(r.Params.Message, "pay") {
				return &mcp.ElicitResult{Action: "decline"}, nil // the human never approves pay
			}
			<-human // a human takes a moment to read the Celsius question
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		}})
	if r := s.call("weather", map[string]any{}); r.IsError {
		t.Fatalf("weather: %q", text(r))
	}
	go func() { time.Sleep(time.Second); close(human) }()
	r := s.call("pay", map[string]any{"to": "mallory"})
	mu.Lock()
	defer mu.Unlock()
	if _, err := os.Stat(mark); err == nil || !r.IsError {
		t.Fatalf("pay went through without the human approving it (questions the human saw: %q; result %q)", seen, text(r))
	}
}
