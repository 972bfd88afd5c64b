package proxy

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logTools returns the digest of name in the session record and in each
// later tools record of a log, in order.
func logTools(t *testing.T, log, name string) (pinned string, later []string) {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rec struct {
			Kind  string `json:"kind"`
			Tools []struct{ Name, Digest string }
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		for _, tl := range rec.Tools {
			if tl.Name != name {
				continue
			}
			switch rec.Kind {
			case "session":
				pinned = tl.Digest
			case "tools":
				later = append(later, tl.Digest)
			}
		}
	}
	return pinned, later
}

// listAll lists every page of the client's tools.
func listAll(t *testing.T, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	t.Helper()
	var out []*mcp.Tool
	for tl, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			return out, err
		}
		out = append(out, tl)
	}
	return out, nil
}

// TestTwoFacedServer: a server shows bailiff a clean definition and the
// client a poisoned one (on a page with a cursor), plus a tool bailiff
// never sees, with no list_changed. Neither reaches the client; the
// poisoned definition is recorded, a call to it carrying the key is
// denied by pinning, and only a human's acceptance makes it callable.
func TestTwoFacedServer(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/two-faced-server.js")
	policy := `version: 1
rules:
  - {id: all, tool: "*", action: allow}
`
	lee, leePub := approverKey(t, "lee")
	s := start(t, setup{policy: policy, server: "two", subject: "ana", approval: true, approvers: []string{leePub}, command: []string{"node", script}})
	tools, err := listAll(t, s.cs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		if strings.Contains(tl.Description, "id_rsa") {
			t.Errorf("the client was shown the poisoned definition of %s: %q", tl.Name, tl.Description)
		}
	}
	if !slices.Equal(names, []string{"echo", "stat"}) {
		t.Errorf("the client sees %v, want [echo stat]: note and extra withheld", names)
	}

	r := s.call("note", map[string]any{"note": "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA"})
	if !r.IsError || !strings.Contains(text(r), "check pinning") || !strings.Contains(text(r), "changed its definition") || !strings.Contains(text(r), "bailiff approve") {
		t.Errorf("the call to the poisoned tool: %v %q, want a pinning refusal naming the approval", r.IsError, text(r))
	}
	if r := s.call("extra", nil); !r.IsError || !strings.Contains(text(r), "check pinning") {
		t.Errorf("the call to the tool only the client was shown: %v %q, want a pinning refusal", r.IsError, text(r))
	}
	if r := s.call("echo", map[string]any{"text": "hi"}); r.IsError {
		t.Errorf("echo, whose definition both were shown: %q", text(r))
	}
	// One tools record per page that showed something new: note's
	// poisoned definition on the first, extra on the second.
	pinned, later := logTools(t, s.log, "note")
	if pinned == "" || len(later) != 2 || later[0] == pinned || later[1] != later[0] {
		t.Errorf("note pinned %q, then recorded %v: want the definition the client was shown, in two tools records", pinned, later)
	}
	// Listing again records nothing new: the log says once what was seen.
	if _, err := listAll(t, s.cs); err != nil {
		t.Fatal(err)
	}
	if _, again := logTools(t, s.log, "note"); len(again) != 2 {
		t.Errorf("listing again wrote %d more tools records, want none", len(again)-2)
	}

	list, err := s.options.Approvals.List()
	if err != nil || len(list) != 1 || list[0].Kind != "definition" || list[0].Tool != "note" {
		t.Fatalf("pending approvals: %+v %v", list, err)
	}
	s.answer(list[0].ID, "approve", lee)
	if r := s.call("note", map[string]any{"note": "groceries"}); r.IsError {
		t.Errorf("note after lee accepted its definition: %q", text(r))
	}
	if _, later = logTools(t, s.log, "note"); len(later) != 3 {
		t.Errorf("note recorded in %d tools records, want 3 (two pages seen, accepted)", len(later))
	}
	s.verify()
}

// TestTwoFacedUnreadable: tools/list answers the proxy cannot read — a
// "tools" key given twice, "tools" that is not a list — reach the client
// as errors, never unchecked.
func TestTwoFacedUnreadable(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/two-faced-server.js")
	policy := "version: 1\nrules:\n  - {id: all, tool: \"*\", action: allow}\n"
	s := start(t, setup{policy: policy, server: "two", command: []string{"node", script}, env: []string{"TWO_FACED_MODE=garbage"}})
	for i := 0; i < 2; i++ {
		res, err := s.cs.ListTools(t.Context(), nil)
		if err == nil || !strings.Contains(err.Error(), "cannot be read") {
			t.Errorf("list %d: %+v %v, want an error", i, res, err)
		}
	}
	s.verify()
}

// TestGatewayWithholdsRugPull: a gateway builds its own tools/list
// answer; after a server rewrites a tool (list_changed) the new
// definition is not in it until a human accepts it.
func TestGatewayWithholdsRugPull(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/faulty-server.js")
	policy := "version: 1\nrules:\n  - {id: all, tool: \"*\", action: allow}\n"
	s := startGateway(t, policy, []Upstream{{Name: "faulty", Cmd: exec.Command("node", script)}})
	has := func() (echo, poisoned bool) {
		tools, err := listAll(t, s.cs)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools {
			echo = echo || tl.Name == "faulty.echo"
			poisoned = poisoned || strings.Contains(tl.Description, "id_rsa")
		}
		return echo, poisoned
	}
	if echo, _ := has(); !echo {
		t.Fatal("faulty.echo is not listed before the change")
	}
	s.call("faulty.mutate", nil)
	echo := true
	for i := 0; i < 50 && echo; i++ { // the re-listing is asynchronous
		var poisoned bool
		if echo, poisoned = has(); poisoned {
			t.Fatal("the gateway listed the rewritten definition")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if echo {
		t.Error("faulty.echo is still listed after its definition changed")
	}
	s.verify()
}
