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

// TestServerCannotStealElicitationID: in run mode the server's requests
// reach the client with the server's ids, and a client response whose id
// is one of the proxy's own is taken as the answer to its ask. When those
// ids were a counter the server could see (its own tools/list), a
// malicious server asked the client "Show temperatures in Celsius?" under
// the id of bailiff's next elicitation: the real question then collided
// at the client, and the human's "yes" to Celsius approved pay. The ids
// are random now; the server's question approves nothing.
func TestServerCannotStealElicitationID(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/idsteal-server.js")
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
		env: []string{"IDSTEAL_MARK=" + mark},
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
