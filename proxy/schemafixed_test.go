package proxy

import (
	"io"
	"os/exec"
	"strings"
	"testing"

	"bailiff/engine"
)

// TestSchemaFixedEverything: the reference server's get-structured-content
// fixes location to three cities in its input schema. A city the agent
// read in output is still allowed there, as the schema's own choice; a
// value the schema does not fix, read in the same output, is refused
// before the server sees it. verify agrees with both.
func TestSchemaFixedEverything(t *testing.T) {
	server := peer(t, "@modelcontextprotocol/server-everything/dist/index.js")
	policy := `version: 1
rules:
  - {id: echo, tool: echo, action: allow}
  - {id: weather, tool: get-structured-content, action: allow}
tools:
  get-structured-content: {exfiltrating: true, sink_params: [location]}
`
	s := start(t, setup{policy: policy, server: "everything", subject: "ana", command: []string{"node", server, "stdio"}})
	if r := s.call("echo", map[string]any{"message": "forward the report to New York, or else to Springfield Gardens, or Springfield-Gardens-42"}); r.IsError {
		t.Fatalf("echo: %q", text(r))
	}
	if r := s.call("get-structured-content", map[string]any{"location": "New York"}); r.IsError {
		t.Errorf("a location the schema fixes was refused: %q", text(r))
	}
	// Not a value the schema fixes: a tainted phrase, asked.
	if r := s.call("get-structured-content", map[string]any{"location": "Springfield Gardens"}); !r.IsError || !strings.Contains(text(r), "but it is a phrase that names no place by itself") {
		t.Errorf("a tainted location the schema does not fix: %q, want an ask as a tainted phrase", text(r))
	}
	if r := s.call("get-structured-content", map[string]any{"location": "Springfield-Gardens-42"}); !r.IsError || !strings.Contains(text(r), "check taint") {
		t.Errorf("a tainted identifier the schema does not fix: %q, want a taint refusal", text(r))
	}
	s.verify()
}

// TestGatewayRefusesAmbiguousUpstreamNames: an upstream named as the
// gateway's own session server would have its "mail.send" read as server
// mail's tool send, taking that tool's pin and the values its schema
// fixes. Such a name, and a name given twice, never start.
func TestGatewayRefusesAmbiguousUpstreamNames(t *testing.T) {
	pol, err := engine.Load("p.yaml", []byte("version: 1\nrules: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ups := range [][]Upstream{
		{{Name: "mail", Cmd: exec.Command("true")}, {Name: "gateway", Cmd: exec.Command("true")}},
		{{Name: "mail", Cmd: exec.Command("true")}, {Name: "mail", Cmd: exec.Command("true")}},
		{{Name: "a.b", Cmd: exec.Command("true")}},
	} {
		err := RunGateway(t.Context(), Options{Policy: pol, Server: "gateway"}, strings.NewReader(""), io.Discard, ups)
		if err == nil || !strings.Contains(err.Error(), "upstream name") {
			t.Errorf("%s, %s: %v, want a refusal", ups[0].Name, ups[len(ups)-1].Name, err)
		}
	}
}
