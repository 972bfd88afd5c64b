package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeQuickstart runs the README's "own servers" quickstart as
// printed, against a client config holding the real filesystem server's
// entry, then starts the wrapped entry as the client would (with the
// server's command swapped for one that exits at once): the starter
// policy, the name init gives the server and run's check that the policy
// serves it must agree, or the user's first start is refused.
func TestReadmeQuickstart(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := shBlock(t, string(readme), "### 2. ")
	if !strings.Contains(strings.Join(lines, "\n"), "--server filesystem") {
		t.Errorf("the quickstart does not name the server (--server): a policy for another name denies every call")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "fixtures"), filepath.Join(dir, "fixtures")); err != nil {
		t.Fatal(err)
	}
	config := `{"mcpServers": {"filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/ana/projects"]}}}`
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	// go install's binary: this test stands in for it.
	defer func(f func() (string, error)) { executable = f }(executable)
	installed := filepath.Join(dir, "go", "bin", "bailiff")
	if err := os.MkdirAll(filepath.Dir(installed), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(installed, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	executable = func() (string, error) { return installed, nil }
	t.Chdir(dir)
	t.Setenv("BAILIFF_STATE_DIR", filepath.Join(dir, "state"))
	t.Setenv("USER", "ana")

	for _, line := range lines {
		cmdline, _, _ := strings.Cut(line, "#")
		f := strings.Fields(cmdline)
		switch {
		case len(f) == 0:
		case len(f) >= 2 && f[0] == "go" && f[1] == "install":
		case f[0] == "cp" && len(f) == 3:
			b, err := os.ReadFile(f[1])
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if err := os.WriteFile(f[2], b, 0o644); err != nil {
				t.Fatal(err)
			}
		case f[0] == "bailiff":
			var out, errb bytes.Buffer
			if code := run(f[1:], strings.NewReader("y\n"), &out, &errb); code != 0 {
				t.Fatalf("$ %s\nexit %d\n%s%s", line, code, out.String(), errb.String())
			}
		default:
			t.Fatalf("the quickstart's command %q is not one this test can run", line)
		}
	}

	var wrapped struct {
		MCPServers map[string]struct {
			Args []string          `json:"args"`
			Env  map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	b, err := os.ReadFile(".mcp.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &wrapped); err != nil {
		t.Fatalf(".mcp.json after init: %v\n%s", err, b)
	}
	fs := wrapped.MCPServers["filesystem"]
	if len(fs.Args) < 2 || fs.Args[0] != "run" || fs.Env["BAILIFF_SERVER"] != "filesystem" || fs.Env["BAILIFF_ALLOW_DENY_ALL"] != "" {
		t.Fatalf("init did not wrap the server as the policy names it:\n%s", b)
	}
	for k, v := range fs.Env {
		t.Setenv(k, v)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"run", "true"}, strings.NewReader(""), &out, &errb); code != 0 || strings.Contains(errb.String(), "no rule") {
		t.Fatalf("the wrapped server does not start as the client starts it: exit %d\n%s", code, errb.String())
	}
}

// shBlock is the first ```sh block after the heading that starts with
// prefix, line by line.
func shBlock(t *testing.T, doc, prefix string) []string {
	t.Helper()
	i := strings.Index(doc, "\n"+prefix)
	if i < 0 {
		t.Fatalf("README.md has no heading %q", prefix)
	}
	rest := doc[i:]
	start := strings.Index(rest, "\n```sh\n")
	if start < 0 {
		t.Fatalf("no sh block after %q", prefix)
	}
	rest = rest[start+len("\n```sh\n"):]
	body, _, ok := strings.Cut(rest, "\n```")
	if !ok {
		t.Fatalf("the sh block after %q does not end", prefix)
	}
	return strings.Split(body, "\n")
}
