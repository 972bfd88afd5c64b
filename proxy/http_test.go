package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bailiff/engine"
)

// httpSDKServer starts the Go SDK test server on Streamable HTTP, on a
// loopback port of its own choosing, and returns its URL.
func httpSDKServer(t testing.TB, args ...string) string {
	t.Helper()
	bin := sdkServer(t)
	cmd := exec.Command(bin, append([]string{"-listen", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	select {
	case u := <-line:
		if !strings.HasPrefix(u, "http://") {
			t.Fatalf("sdkserver -listen printed %q", u)
		}
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("sdkserver -listen printed no URL")
	}
	return ""
}

// TestHTTPUpstream: a gateway whose server is reached over Streamable
// HTTP decides and logs every call as for one on stdio: the allowed call
// reaches the server, the denied one never does, the log verifies.
func TestHTTPUpstream(t *testing.T) {
	for _, tc := range []struct {
		name, client string
		serverArgs   []string
	}{
		{"handshake client", "2025-11-25", nil},
		{"stateless client", "2026-07-28", nil},
		{"stateless server", "2025-11-25", []string{"-only-stateless"}},
		{"stateless client, stateless server", "2026-07-28", []string{"-only-stateless"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := filepath.Join(t.TempDir(), "ran")
			url := httpSDKServer(t, append([]string{"-ran", ran}, tc.serverArgs...)...)
			s := start(t, setup{policy: gatewaySDKPolicy, server: "gateway", version: tc.client, client: listens,
				upstreams: []Upstream{{Name: "go", URL: url}}})
			checkSDKSession(t, s, "go.", ran, tc.client)
		})
	}
}

// TestHTTPUpstreamEverything: the npm reference server on Streamable
// HTTP behind a gateway (bailiff tries server/discover first, which this
// server of the handshake refuses, then initializes).
func TestHTTPUpstreamEverything(t *testing.T) {
	everything := peer(t, "@modelcontextprotocol/server-everything/dist/index.js")
	// The server takes a port number only; one the kernel has just handed
	// out and released is free unless something takes it in between.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	port := addr[strings.LastIndex(addr, ":")+1:]
	ln.Close()
	cmd := exec.Command("node", everything, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	policy := `version: 1
rules:
  - {id: echo-ok, server: a, tool: echo, action: allow}
  - {id: no-env, server: a, tool: get-env, action: deny}
`
	s := startGateway(t, policy, []Upstream{{Name: "a", URL: "http://" + addr + "/mcp"}})
	if r := s.call("a.echo", map[string]any{"message": "hi"}); r.IsError || !strings.Contains(text(r), "Echo: hi") {
		t.Fatalf("a.echo: %v %q\nstderr:\n%s", r.IsError, text(r), s.stderr.String())
	}
	if r := s.call("a.get-env", map[string]any{}); !r.IsError || !strings.Contains(text(r), "rule no-env") {
		t.Errorf("a.get-env: %v %q, want a refusal naming rule no-env", r.IsError, text(r))
	}
	rep := s.verify()
	if rep.Calls != 2 {
		t.Errorf("the log holds %d calls, want 2", rep.Calls)
	}
}

// TestHTTPUpstreamPathsNotResolved: in a gateway with a server started
// here and one reached over HTTP, a confined path is resolved through
// this machine's symlinks for the first only; the other may run
// anywhere, so its path is decided as written.
func TestHTTPUpstreamPathsNotResolved(t *testing.T) {
	root := symlinkTree(t)
	pub, priv := filepath.Join(root, "public"), filepath.Join(root, "private")
	pol, err := engine.Load("test", []byte(fmt.Sprintf(`version: 1
packs: [filesystem]
rules:
  - {id: write, tool: write_file, action: allow}
tools:
  write_file:
    allowed_path_prefixes: [%s]
`, pub)))
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(Options{Policy: pol}, strings.NewReader(""), io.Discard)
	p.gateway, p.resolveLinks = true, true
	p.addUpstream("local", strings.NewReader(""), io.Discard)
	p.addUpstreamOn("remote", &connStream{})
	path := pub + "/cache/x.txt"
	got, _, err := p.resolve("local.write_file", map[string]any{"path": path})
	if err != nil || got["path"] != priv+"/x.txt" {
		t.Errorf("local: %v %v, want the path resolved into private", got, err)
	}
	got, _, err = p.resolve("remote.write_file", map[string]any{"path": path})
	if err != nil || got["path"] != path {
		t.Errorf("remote: %v %v, want the path as written", got, err)
	}
}
