package proxy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneBadServerLosesOnlyItsTools: one server of a gateway answers the
// pinning tools/list with something unreadable. It loses its own tools
// (a call to it is denied by pinning), and the other server's tools are
// served as usual; the log verifies.
func TestOneBadServerLosesOnlyItsTools(t *testing.T) {
	everything := peer(t, "@modelcontextprotocol/server-everything/dist/index.js")
	script, _ := filepath.Abs("testdata/faulty-server.js")
	bad := exec.Command("node", script)
	bad.Env = append(os.Environ(), "FAULTY_BADLIST=1")
	policy := `version: 1
rules:
  - {id: all, tool: "*", action: allow}
`
	s := startGateway(t, policy, []Upstream{
		{Name: "a", Cmd: exec.Command("node", everything, "stdio")},
		{Name: "bad", Cmd: bad},
	})
	if r := s.call("a.echo", map[string]any{"message": "hi"}); r.IsError || !strings.Contains(text(r), "Echo: hi") {
		t.Fatalf("a.echo: %v %q", r.IsError, text(r))
	}
	if r := s.call("bad.echo", map[string]any{"text": "hi"}); !r.IsError || !strings.Contains(text(r), "check pinning") {
		t.Errorf("bad.echo: %v %q, want a pinning refusal", r.IsError, text(r))
	}
	s.verify()
	if !strings.Contains(s.stderr.String(), "cannot list the tools of bad") {
		t.Errorf("stderr does not say why bad is left out:\n%s", s.stderr.String())
	}
}
