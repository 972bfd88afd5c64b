package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRunHTTPUpstream: bailiff run --url and a gateway.yaml server with a
// url reach a Go SDK server on Streamable HTTP; the allowed call is
// answered, the denied one refused and never run, and the log verifies.
func TestRunHTTPUpstream(t *testing.T) {
	dir := t.TempDir()
	server := filepath.Join(dir, "sdkserver")
	if out, err := exec.Command("go", "build", "-o", server, "../../proxy/testdata/sdkserver").CombinedOutput(); err != nil {
		t.Fatalf("go build sdkserver: %v\n%s", err, out)
	}
	ran := filepath.Join(dir, "ran")
	srv := exec.Command(server, "-listen", "127.0.0.1:0", "-ran", ran)
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	url := strings.TrimSpace(line)
	if err != nil || !strings.HasPrefix(url, "http://") {
		t.Fatalf("sdkserver -listen: %q %v", line, err)
	}
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(`version: 1
rules:
  - {id: echo-ok, tool: echo, action: allow}
  - {id: no-send, tool: send, action: deny}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	gwAudit := filepath.Join(dir, "gw.audit.jsonl")
	config := filepath.Join(dir, "gw.yaml")
	if err := os.WriteFile(config, []byte("policy: "+policy+"\naudit: "+gwAudit+"\nprincipal: {subject: ana}\nservers:\n  go:\n    url: "+url+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, version, prefix string
		args                  []string
		env                   []string
	}{
		{"run stateless", "2026-07-28", "", []string{"run", "--policy", policy, "--url", url}, nil},
		{"run handshake", "2025-11-25", "", []string{"run", "--policy", policy, "--url", url}, nil},
		// as bailiff init wraps a "url" entry
		{"run BAILIFF_URL", "2025-11-25", "", []string{"run", "--policy", policy}, []string{"BAILIFF_URL=" + url}},
		{"gateway", "2025-11-25", "go.", []string{"gateway", "--config", config}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			audit, args := gwAudit, tc.args
			if tc.args[0] == "run" {
				audit = filepath.Join(t.TempDir(), "audit.jsonl")
				args = append([]string{"run", "--audit", audit}, tc.args[1:]...)
			}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(append(os.Environ(), childEnv+"=1", "USER=tester"), tc.env...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "0"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, stderr.String())
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.prefix + "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "echo: hi" {
				t.Fatalf("echo: %v %+v\n%s", err, res, stderr.String())
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.prefix + "send", Arguments: map[string]any{"text": "x"}})
			if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "rule no-send") {
				t.Fatalf("send: %v %+v, want a refusal naming rule no-send", err, res)
			}
			cs.Close()
			var out strings.Builder
			if code := run([]string{"verify", "--format", "json", audit}, &out, &out); code != 0 || !strings.Contains(out.String(), `"calls":2`) {
				t.Errorf("verify: exit %d\n%s", code, out.String())
			}
			if b, err := os.ReadFile(ran); err == nil {
				t.Errorf("a denied call reached the server: %q", b)
			}
		})
	}
}

func TestGatewayConfigURL(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, server, want string }{
		{"url and command", "    url: http://127.0.0.1:1/mcp\n    command: x\n", "one or the other"},
		{"not http", "    url: file:///etc/passwd\n", "not an http or https URL"},
		{"neither", "    env: {A: b}\n", "needs a command or a url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := filepath.Join(dir, "gw.yaml")
			if err := os.WriteFile(config, []byte("servers:\n  s:\n"+tc.server), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := loadGatewayConfig(config)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestGatewayListenLoopbackOnly(t *testing.T) {
	for _, tc := range []struct {
		lp   listenParams
		want string // "" for accepted
	}{
		{listenParams{addr: "127.0.0.1:0", maxBytes: 1}, ""},
		{listenParams{addr: "[::1]:0", maxBytes: 1}, ""},
		{listenParams{addr: "localhost:8931", maxBytes: 1}, ""},
		{listenParams{addr: ":8931", maxBytes: 1}, "reachable from other machines"},
		{listenParams{addr: "0.0.0.0:8931", maxBytes: 1}, "reachable from other machines"},
		{listenParams{addr: "192.0.2.1:8931", maxBytes: 1}, "reachable from other machines"},
		{listenParams{addr: "0.0.0.0:8931", maxBytes: 1, allowRemote: true}, ""},
		{listenParams{addr: "8931", maxBytes: 1}, "not host:port"},
		{listenParams{addr: "127.0.0.1:0"}, "must be positive"},
	} {
		err := checkListen(tc.lp)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.lp, err, tc.want)
		}
	}
}

// TestGatewayListen: bailiff gateway --listen, end to end: a Go SDK
// client over Streamable HTTP at 2026-07-28, the allowed call answered
// and the denied one refused; the log verifies once bailiff has stopped.
func TestGatewayListen(t *testing.T) {
	dir := t.TempDir()
	server := filepath.Join(dir, "sdkserver")
	if out, err := exec.Command("go", "build", "-o", server, "../../proxy/testdata/sdkserver").CombinedOutput(); err != nil {
		t.Fatalf("go build sdkserver: %v\n%s", err, out)
	}
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(`version: 1
rules:
  - {id: echo-ok, server: go, tool: echo, action: allow}
  - {id: no-send, server: go, tool: send, action: deny}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(dir, "gw.audit.jsonl")
	config := filepath.Join(dir, "gw.yaml")
	if err := os.WriteFile(config, []byte("policy: "+policy+"\naudit: "+audit+"\nprincipal: {subject: ana}\nservers:\n  go:\n    command: "+server+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "gateway", "--config", config, "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), childEnv+"=1", "USER=tester")
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(errPipe)
	var url string
	for url == "" && lines.Scan() {
		if _, after, ok := strings.Cut(lines.Text(), "serving Streamable HTTP at "); ok {
			url = after
		}
	}
	if url == "" {
		t.Fatal("bailiff gateway --listen said no URL")
	}
	go func() {
		for lines.Scan() {
		}
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "go.echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "echo: hi" {
		t.Fatalf("echo: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "go.send", Arguments: map[string]any{"text": "x"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "rule no-send") {
		t.Fatalf("send: %v %+v, want a refusal naming rule no-send", err, res)
	}
	cs.Close()
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Errorf("bailiff gateway --listen after SIGINT: %v", err)
	}
	var out strings.Builder
	if code := run([]string{"verify", "--format", "json", audit}, &out, &out); code != 0 || !strings.Contains(out.String(), `"calls":2`) {
		t.Errorf("verify: exit %d\n%s", code, out.String())
	}
}
