package main

import (
	"bufio"
	"context"
	"math"
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
	server := sdkServer(t, dir)
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
	policy := writeTestFile(t, dir, "policy.yaml", "version: 1\nrules:\n  - {id: echo-ok, tool: echo, action: allow}\n  - {id: no-send, tool: send, action: deny}\n")
	gwAudit := filepath.Join(dir, "gw.audit.jsonl")
	config := filepath.Join(dir, "gw.yaml")
	writeTestFile(t, dir, "gw.yaml", "policy: "+policy+"\naudit: "+gwAudit+"\nprincipal: {subject: ana}\nservers:\n  go:\n    url: "+url+"\n")
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
			echoAllowedSendDenied(t, ctx, cs, tc.prefix, &stderr)
			cs.Close()
			verifiesWithCalls(t, audit, 2)
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
			_, err := loadGatewayConfig(nil, config)
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
		{listenParams{addr: "127.0.0.1:0", maxBytes: 1, maxSessions: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1}, ""},
		{listenParams{addr: "[::1]:0", maxBytes: 1, maxSessions: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1}, ""},
		{listenParams{addr: "localhost:8931", maxBytes: 1, maxSessions: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1}, ""},
		{listenParams{addr: ":8931", maxBytes: 1, maxSessions: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1}, "reachable from other machines"},
		{listenParams{addr: "0.0.0.0:8931", maxBytes: 1, maxSessions: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1}, "reachable from other machines"},
		{listenParams{addr: "192.0.2.1:8931", maxBytes: 1, maxSessions: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1}, "reachable from other machines"},
		{listenParams{addr: "0.0.0.0:8931", maxBytes: 1, maxSessions: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1, allowRemote: true}, ""},
		{listenParams{addr: "8931", maxBytes: 1, maxSessions: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1}, "not host:port"},
		{listenParams{addr: "127.0.0.1:0", maxSessions: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1}, "--max-request-bytes must be positive"},
		{listenParams{addr: "127.0.0.1:0", maxBytes: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1}, "--max-sessions 0: must be positive"},
		{listenParams{addr: "127.0.0.1:0", maxBytes: 1, maxSessions: 1, initBurst: -5}, "--initialize-burst -5: must be positive"},
		{listenParams{addr: "127.0.0.1:0", maxBytes: 1, maxSessions: 1, initBurst: 1}, "--max-principals 0: must be positive"},
		{listenParams{addr: "127.0.0.1:0", maxBytes: 1, maxSessions: 1, initBurst: 1, maxPrincipals: 1}, "--max-server-sessions 0: must be positive"},
		{listenParams{addr: "127.0.0.1:0", maxBytes: 1, maxSessions: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1, perPrincipal: -1}, "--max-sessions-per-principal -1: must be positive, or 0"},
		{listenParams{addr: "127.0.0.1:0", maxBytes: 1, maxSessions: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1, initRate: -1}, "--initialize-rate -1: must be"},
		{listenParams{addr: "127.0.0.1:0", maxBytes: 1, maxSessions: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1, initRate: math.NaN()}, "--initialize-rate NaN: must be"},
		{listenParams{addr: "127.0.0.1:0", maxBytes: 1, maxSessions: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1, initRate: math.Inf(1)}, "--initialize-rate +Inf: must be"},
		{listenParams{addr: "127.0.0.1:0", maxBytes: 1, maxSessions: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1, initRate: 1e-9}, "a refused client would wait hours"},
		{listenParams{addr: "127.0.0.1:0", maxBytes: 1, maxSessions: 1, initBurst: 1, maxPrincipals: 1, serverSessions: 1, initRate: 0}, ""},
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
	server := sdkServer(t, dir)
	policy := writeTestFile(t, dir, "policy.yaml", gatewayEchoPolicy)
	audit := filepath.Join(dir, "gw.audit.jsonl")
	config := filepath.Join(dir, "gw.yaml")
	writeTestFile(t, dir, "gw.yaml", "policy: "+policy+"\naudit: "+audit+"\nprincipal: {subject: ana}\nservers:\n  go:\n    command: "+server+"\n")
	listenAndCall(t, "go.", "2026-07-28", "gateway", "--config", config, "--listen", "127.0.0.1:0")
	verifiesWithCalls(t, audit, 2)
}

// TestRunListen: bailiff run --listen serves one server on Streamable
// HTTP under its own tool names, to a client of the stateless revision
// and of the handshake: the allowed call is answered, the denied one
// refused.
func TestRunListen(t *testing.T) {
	dir := t.TempDir()
	server := sdkServer(t, dir)
	policy := writeTestFile(t, dir, "policy.yaml", gatewayEchoPolicy)
	audit := filepath.Join(dir, "run.audit.jsonl")
	for i, version := range []string{"2026-07-28", "2025-11-25"} {
		listenAndCall(t, "", version, "run", "--policy", policy, "--server", "go", "--audit", audit, "--listen", "127.0.0.1:0", "--", server)
		verifiesWithCalls(t, audit, 2*(i+1))
	}
}

// listenAndCall starts bailiff with args, which serve HTTP, connects at
// version, and calls echo (allowed) and send (denied) under prefix.
func listenAndCall(t *testing.T, prefix, version string, args ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
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
		t.Fatalf("bailiff %s --listen said no URL", args[0])
	}
	go func() {
		for lines.Scan() {
		}
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	echoAllowedSendDenied(t, ctx, cs, prefix, &strings.Builder{})
	cs.Close()
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Errorf("bailiff %s --listen after SIGINT: %v", args[0], err)
	}
}

// TestGatewayConfigPathsNotStdin: a config in the working directory whose
// policy, audit or secret is "-" is refused, not joined to "-" and read from
// standard input, which carries the MCP session (a client's first message
// would be read as the policy).
func TestGatewayConfigPathsNotStdin(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, key := range []string{"policy", "audit", "secret"} {
		t.Run(key, func(t *testing.T) {
			if err := os.WriteFile("gw.yaml", []byte(key+": \"-\"\nservers:\n  s:\n    command: \"true\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			stdin := strings.NewReader("version: 1\nrules:\n  - {id: all, tool: \"*\", action: allow}\n")
			_, err := loadGatewayConfig(stdin, "gw.yaml")
			if err == nil || !strings.Contains(err.Error(), key+" cannot be -") {
				t.Errorf("got %v, want %s refused", err, key)
			}
			if stdin.Len() == 0 {
				t.Errorf("standard input was read")
			}
		})
	}
}
