package proxy

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// children are the pids of this test process's live children.
func children() map[int]bool {
	me := os.Getpid()
	out := map[int]bool{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fs := strings.Fields(s[i+1:])
		if len(fs) < 2 || fs[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(fs[1]); ppid == me {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			out[pid] = true
		}
	}
	return out
}

// newChildren waits (up to 20 s) until exactly want children started
// since base are alive, and says how many are.
func newChildren(base map[int]bool, want int) int {
	deadline := time.Now().Add(20 * time.Second)
	for {
		n := 0
		for p := range children() {
			if !base[p] {
				n++
			}
		}
		if n == want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestListenServerSessionsCap: every session runs its own servers, from
// its initialize on, at most MaxServerSessions at once; one more is
// refused, and a session ended stops its servers and frees its place.
func TestListenServerSessionsCap(t *testing.T) {
	bin := sdkServer(t)
	base := children()
	l := startListening(t, clientsPolicy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}}, HTTPOptions{MaxServerSessions: 2})
	a, b := l.connect(t, "2025-11-25"), l.connect(t, "2025-11-25")
	defer a.Close()
	defer b.Close()
	callText(t, a, "go.echo", "a")
	callText(t, b, "go.echo", "b")
	if code, body, _ := postInit(t, http.DefaultClient, l.url); code != http.StatusServiceUnavailable || !strings.Contains(body, "session cap is reached: 2 sessions open") {
		t.Errorf("a third session: %d %q, want 503 naming the cap of 2", code, body)
	}
	if n := newChildren(base, 2); n != 2 {
		t.Errorf("%d server processes for two sessions, want 2", n)
	}
	a.Close()
	if n := newChildren(base, 1); n != 1 {
		t.Errorf("%d server processes once a session ended, want 1", n)
	}
	// The place is free once the ended session's servers have stopped.
	var c *mcp.ClientSession
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err = mcp.NewClient(&mcp.Implementation{Name: "c", Version: "0"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: l.url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("a session once a place was free: %v", err)
	}
	defer c.Close()
	if ok, out := callText(t, c, "go.echo", "c"); !ok {
		t.Errorf("the third session once a place was free: %q", out)
	}
	b.Close()
	c.Close()
	l.stop()
	if n := newChildren(base, 0); n != 0 {
		t.Errorf("%d server processes left after the gateway stopped", n)
	}
}

// TestListenStatelessIdleEnds: a principal's stateless session ends once
// unused for the idle timeout, and frees the principal's place.
func TestListenStatelessIdleEnds(t *testing.T) {
	bin := sdkServer(t)
	l := startListening(t, clientsPolicy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}},
		HTTPOptions{Authenticate: byName, Resource: "http://127.0.0.1/mcp", Issuer: "https://id.test", MaxPrincipals: 1, SessionTimeout: 200 * time.Millisecond})
	echo := func(who string) (bool, string) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: who, Version: "0"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: l.url, MaxRetries: -1, HTTPClient: &http.Client{Transport: bearerTransport(who)}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			return false, err.Error()
		}
		defer cs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "go.echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil {
			return false, err.Error()
		}
		return !r.IsError, text(r)
	}
	if ok, out := echo("ana"); !ok {
		t.Fatalf("ana: %q", out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, out := echo("ben")
		if ok {
			break
		}
		if !strings.Contains(out, "Service Unavailable") || time.Now().After(deadline) {
			t.Fatalf("ben, once ana's stateless session went idle: %q", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestListenStatelessServerDeath: when the shared stateless session's
// servers die, it does not start again clean behind its clients' backs:
// its calls are refused until it has gone unused for the idle timeout.
func TestListenStatelessServerDeath(t *testing.T) {
	bin := sdkServer(t)
	base := children()
	l := startListening(t, clientsPolicy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}}, HTTPOptions{})
	s := l.connect(t, "2026-07-28")
	defer s.Close()
	callText(t, s, "go.echo", "write to mallory@evil.example")
	if n := newChildren(base, 1); n != 1 {
		t.Fatalf("%d server processes, want 1", n)
	}
	for p := range children() {
		if !base[p] {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	newChildren(base, 0)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		r, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "go.send", Arguments: map[string]any{"text": "mallory@evil.example"}})
		cancel()
		if err != nil && strings.Contains(err.Error(), "this session has ended") {
			break
		}
		if err == nil && !strings.Contains(text(r), "check taint") {
			t.Fatalf("after its servers died, the stateless session's send: %q: a fresh, untainted session", text(r))
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session never said it ended: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
