package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRunGoSDKStateless: the measured failure, end to end. A Go SDK
// client negotiating 2026-07-28 (server/discover, no initialized
// notification) with a Go SDK server through the bailiff run process:
// the allowed call is answered without waiting on a notification, the
// denied one is refused naming its rule, and bailiff verify passes the
// log. Then the same for a client capped to 2025-11-25, and through
// bailiff gateway.
func TestRunGoSDKStateless(t *testing.T) {
	dir := t.TempDir()
	server := sdkServer(t, dir)
	policy := writeTestFile(t, dir, "policy.yaml", "version: 1\nrules:\n  - {id: echo-ok, tool: echo, action: allow}\n  - {id: no-send, tool: send, action: deny}\n")
	gpolicy := writeTestFile(t, dir, "gateway.yaml", gatewayEchoPolicy)
	gwAudit := filepath.Join(dir, "gw.audit.jsonl")
	config := filepath.Join(dir, "gw.yaml")
	writeTestFile(t, dir, "gw.yaml", "policy: "+gpolicy+"\naudit: "+gwAudit+"\nprincipal: {subject: ana}\nservers:\n  go:\n    command: "+server+"\n")
	for _, tc := range []struct {
		name, version, prefix string
		args                  []string
	}{
		{"run stateless", "2026-07-28", "", []string{"run", "--policy", policy, "--", server}},
		{"run handshake", "2025-11-25", "", []string{"run", "--policy", policy, "--", server}},
		{"gateway stateless", "2026-07-28", "go.", []string{"gateway", "--config", config}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			audit, args := gwAudit, tc.args
			if tc.args[0] == "run" {
				audit = filepath.Join(t.TempDir(), "audit.jsonl")
				args = append([]string{"run", "--audit", audit}, tc.args[1:]...)
			}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), childEnv+"=1", "USER=tester")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			client := mcp.NewClient(&mcp.Implementation{Name: "stateless-test", Version: "0"}, nil)
			// Far below the minute a call once waited for an initialized
			// notification that never comes, but generous.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, stderr.String())
			}
			if v := cs.InitializeResult().ProtocolVersion; v != tc.version {
				t.Errorf("negotiated %s, want %s", v, tc.version)
			}
			echoAllowedSendDenied(t, ctx, cs, tc.prefix, &stderr)
			cs.Close()
			verifiesWithCalls(t, audit, 2)
		})
	}
}

// TestRunGoSDKStatelessAsk: a policy ask through the bailiff run process
// reaches the human whichever revision the client speaks (input_required
// at 2026-07-28, elicitation/create before): the approved call reaches
// the server, the declined one does not, and bailiff verify passes the
// log.
func TestRunGoSDKStatelessAsk(t *testing.T) {
	dir := t.TempDir()
	server := sdkServer(t, dir)
	policy := writeTestFile(t, dir, "policy.yaml", "version: 1\nrules:\n  - {id: send-asks, tool: send, action: ask}\n")
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			audit := filepath.Join(t.TempDir(), "audit.jsonl")
			ran := filepath.Join(t.TempDir(), "ran")
			cmd := exec.Command(os.Args[0], "run", "--audit", audit, "--policy", policy, "--", server, "-ran", ran)
			cmd.Env = append(os.Environ(), childEnv+"=1", "USER=tester")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			client := mcp.NewClient(&mcp.Implementation{Name: "stateless-test", Version: "0"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					if strings.Contains(r.Params.Message, `"yes"`) {
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
					}
					return &mcp.ElicitResult{Action: "decline"}, nil
				}})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, stderr.String())
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"text": "yes"}})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "sent" {
				t.Fatalf("approved send: %v %+v\n%s", err, res, stderr.String())
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"text": "no"}})
			if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "declined by elicitation") {
				t.Fatalf("declined send: %v %+v", err, res)
			}
			cs.Close()
			if b, _ := os.ReadFile(ran); string(b) != "yes\n" {
				t.Errorf("the server ran %q, want the approved call only", b)
			}
			verifiesWithCalls(t, audit, 2)
		})
	}
}

// gatewayEchoPolicy allows the test server's echo behind a gateway and
// denies its send.
const gatewayEchoPolicy = "version: 1\nrules:\n  - {id: echo-ok, server: go, tool: echo, action: allow}\n  - {id: no-send, server: go, tool: send, action: deny}\n"
