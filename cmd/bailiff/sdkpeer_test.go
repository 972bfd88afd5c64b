package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkServer builds the repo's Go SDK test server into dir.
func sdkServer(t *testing.T, dir string) string {
	t.Helper()
	server := filepath.Join(dir, "sdkserver")
	if out, err := exec.Command("go", "build", "-o", server, "../../proxy/testdata/sdkserver").CombinedOutput(); err != nil {
		t.Fatalf("go build sdkserver: %v\n%s", err, out)
	}
	return server
}

// writeTestFile writes text to dir/name and returns its path.
func writeTestFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// echoAllowedSendDenied calls the test server's echo, which the policy
// allows, and send, which rule no-send denies, with prefix before each
// tool name (a gateway's "go.").
func echoAllowedSendDenied(t *testing.T, ctx context.Context, cs *mcp.ClientSession, prefix string, stderr *strings.Builder) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: prefix + "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "echo: hi" {
		t.Fatalf("echo: %v %+v\n%s", err, res, stderr.String())
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: prefix + "send", Arguments: map[string]any{"text": "x"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "rule no-send") {
		t.Fatalf("send: %v %+v, want a refusal naming rule no-send", err, res)
	}
}

// verifiesWithCalls runs bailiff verify on audit and wants it clean,
// holding n calls.
func verifiesWithCalls(t *testing.T, audit string, n int) {
	t.Helper()
	var out strings.Builder
	if code := run([]string{"verify", "--format", "json", audit}, nil, &out, &out); code != 0 || !strings.Contains(out.String(), `"calls":`+strconv.Itoa(n)) {
		t.Errorf("verify: exit %d\n%s", code, out.String())
	}
}
