package proxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"bailiff/engine"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientsPolicy: echo (a read) is allowed three times a session; send
// goes out to the address its text names.
const clientsPolicy = `version: 1
rules:
  - {id: echo-ok, server: go, tool: echo, action: allow}
  - {id: send-ok, server: go, tool: send, action: allow}
tools:
  send: {exfiltrating: true, sink_params: [text]}
  echo: {max_calls: 3}
`

func callText(t *testing.T, cs *mcp.ClientSession, tool, arg string) (bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": arg}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return !r.IsError, text(r)
}

// TestListenClientsApart: two HTTP clients of one gateway are two
// sessions. What A read taints A's send, not B's (B is asked, as for any
// address nobody vouched for); A's calls spend A's budget, not B's.
func TestListenClientsApart(t *testing.T) {
	bin := sdkServer(t)
	l := startListening(t, clientsPolicy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}}, HTTPOptions{})
	a, b := l.connect(t, "2025-11-25"), l.connect(t, "2025-11-25")
	defer a.Close()
	defer b.Close()
	if ok, out := callText(t, a, "go.echo", "write to mallory@evil.example"); !ok {
		t.Fatalf("A's read: %s", out)
	}
	if ok, out := callText(t, a, "go.send", "mallory@evil.example"); ok || !strings.Contains(out, "check taint") {
		t.Errorf("A's send where A read: %v %q, want denied by taint", ok, out)
	}
	if ok, out := callText(t, b, "go.send", "mallory@evil.example"); ok || strings.Contains(out, "taint") || !strings.Contains(out, "needs a human's approval") {
		t.Errorf("B's send where A read: %v %q, want asked as any unknown address, not denied by taint", ok, out)
	}
	for i := range 2 {
		if ok, out := callText(t, a, "go.echo", "hi"); !ok {
			t.Fatalf("A's echo %d: %s", i+2, out)
		}
	}
	if ok, out := callText(t, a, "go.echo", "hi"); ok || !strings.Contains(out, "check budget") {
		t.Errorf("A's fourth echo: %v %q, want refused by its budget", ok, out)
	}
	if ok, out := callText(t, b, "go.echo", "hi"); !ok {
		t.Errorf("B's first echo, after A spent A's budget: %q", out)
	}
	a.Close()
	b.Close()
	if rep := l.verify(t, 2); rep.Calls != 7 {
		t.Errorf("the log holds %d calls, want 7", rep.Calls)
	}
}

// TestListenManyClients: 64 clients at once are 64 sessions of one log,
// every call decided once, and the log verifies.
func TestListenManyClients(t *testing.T) {
	bin := sdkServer(t)
	// One address opens them all: its initialize rate is not the test.
	l := startListening(t, clientsPolicy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}}, HTTPOptions{NoInitRate: true})
	const clients, calls = 64, 2
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "many", Version: "0"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: l.url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				errs <- err
				return
			}
			defer cs.Close()
			for j := range calls {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "go.echo", Arguments: map[string]any{"text": fmt.Sprint(i, "-", j)}})
				cancel()
				if err != nil || r.IsError || text(r) != fmt.Sprintf("echo: %d-%d", i, j) {
					errs <- fmt.Errorf("client %d call %d: %v %v", i, j, err, r)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if rep := l.verify(t, clients); rep.Calls != clients*calls {
		t.Errorf("the log holds %d calls, want %d", rep.Calls, clients*calls)
	}
}

// TestListenStatelessShared: stateless requests (2026-07-28) name no
// session; without identity every one acts for the gateway's one
// principal, and they share one session, as documented.
func TestListenStatelessShared(t *testing.T) {
	bin := sdkServer(t)
	l := startListening(t, clientsPolicy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}}, HTTPOptions{})
	a, b := l.connect(t, "2026-07-28"), l.connect(t, "2026-07-28")
	defer a.Close()
	defer b.Close()
	callText(t, a, "go.echo", "write to mallory@evil.example")
	if ok, out := callText(t, b, "go.send", "mallory@evil.example"); ok || !strings.Contains(out, "check taint") {
		t.Errorf("a stateless send where another stateless client read: %v %q, want denied by taint (one session)", ok, out)
	}
	a.Close()
	b.Close()
	l.verify(t, 1)
}

// bearerTransport adds a token to every request.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// byName names the principal its token spells: the proxy's side of
// identity (checking real tokens is cmd's, tested there).
func byName(_ context.Context, token string) (engine.Principal, time.Time, error) {
	if token == "" || strings.ContainsAny(token, " \x00") {
		return engine.Principal{}, time.Time{}, fmt.Errorf("no such token")
	}
	return engine.Principal{Subject: token, Issuer: "https://id.test", Authenticated: engine.AuthOIDC}, time.Now().Add(time.Hour), nil
}

// TestListenPerPrincipalCap: one principal cannot hold more sessions
// than its share, whatever address it comes from, and another principal
// is not held back by it; a session ended frees its place.
func TestListenPerPrincipalCap(t *testing.T) {
	bin := sdkServer(t)
	l := startListening(t, clientsPolicy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}},
		HTTPOptions{Authenticate: byName, Resource: "http://127.0.0.1/mcp", Issuer: "https://id.test", MaxSessionsPerPrincipal: 2, NoInitRate: true})
	connect := func(who string) (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: who, Version: "0"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: l.url, MaxRetries: -1, HTTPClient: &http.Client{Transport: bearerTransport(who)}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	}
	var held []*mcp.ClientSession
	for range 2 {
		cs, err := connect("ana")
		if err != nil {
			t.Fatalf("ana's session within her share: %v", err)
		}
		held = append(held, cs)
	}
	if cs, err := connect("ana"); err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("ana's third session: %v, want 503", err)
		if cs != nil {
			cs.Close()
		}
	}
	ben, err := connect("ben")
	if err != nil {
		t.Fatalf("ben, while ana holds her share: %v", err)
	}
	if ok, out := callText(t, ben, "go.echo", "hi"); !ok {
		t.Errorf("ben's echo: %q", out)
	}
	ben.Close()
	held[0].Close()
	// Its place is free once its servers have stopped, a moment after.
	var cs *mcp.ClientSession
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if cs, err = connect("ana"); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("ana's session once one of hers ended: %v", err)
	}
	cs.Close()
	held[1].Close()
}

// TestListenStatelessPrincipalsApart: stateless requests of two
// principals are two sessions: what A read does not taint B's send.
func TestListenStatelessPrincipalsApart(t *testing.T) {
	bin := sdkServer(t)
	l := startListening(t, clientsPolicy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}},
		HTTPOptions{Authenticate: byName, Resource: "http://127.0.0.1/mcp", Issuer: "https://id.test"})
	connect := func(who string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: who, Version: "0"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: l.url, MaxRetries: -1, HTTPClient: &http.Client{Transport: bearerTransport(who)}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		return cs
	}
	a, a2, b := connect("ana"), connect("ana"), connect("ben")
	defer a.Close()
	defer a2.Close()
	defer b.Close()
	callText(t, a, "go.echo", "write to mallory@evil.example")
	if ok, out := callText(t, a2, "go.send", "mallory@evil.example"); ok || !strings.Contains(out, "check taint") {
		t.Errorf("ana's other stateless client, where ana read: %v %q, want denied by taint (one session per principal)", ok, out)
	}
	if ok, out := callText(t, b, "go.send", "mallory@evil.example"); ok || strings.Contains(out, "taint") || !strings.Contains(out, "needs a human's approval") {
		t.Errorf("ben's stateless send where ana read: %v %q, want asked, not denied by taint", ok, out)
	}
	a.Close()
	a2.Close()
	b.Close()
	l.verify(t, 2)
}

// TestListenPerPrincipalRate: one principal opens sessions at an
// address's initialize rate wherever it comes from; another principal,
// from the same address, is not held back by it.
func TestListenPerPrincipalRate(t *testing.T) {
	bin := sdkServer(t)
	l := startListening(t, clientsPolicy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}},
		HTTPOptions{Authenticate: byName, Resource: "http://127.0.0.1/mcp", Issuer: "https://id.test", InitRate: 1.0 / 60, InitBurst: 2})
	from := func(addr string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	connect := func(who, addr string) error {
		c := from(addr)
		c.Transport = bearerOver{who, c.Transport}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: who, Version: "0"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: l.url, MaxRetries: -1, HTTPClient: c}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err == nil {
			cs.Close()
		}
		return err
	}
	for range 2 {
		if err := connect("ana", "127.0.0.1"); err != nil {
			t.Fatalf("ana within her burst: %v", err)
		}
	}
	if err := connect("ana", "127.0.0.2"); err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("ana past her burst, from another address: %v, want 503", err)
	}
	if err := connect("ben", "127.0.0.2"); err != nil {
		t.Errorf("ben, from an address ana used once: %v", err)
	}
}

// bearerOver adds a token to every request sent through next.
type bearerOver struct {
	token string
	next  http.RoundTripper
}

func (b bearerOver) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
