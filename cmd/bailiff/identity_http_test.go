package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// bearer adds a token to every request, as a client holding one does.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// postJSON posts a JSON-RPC body with a bearer token and headers, and
// reads the answer whole.
func postJSON(t *testing.T, url, token, body string, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp, got
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// httpGateway starts gateway --listen with config and waits until it
// serves.
func httpGateway(t *testing.T, config, addr string) *lockedLog {
	return httpGatewayArgs(t, addr, "--config", config)
}

// lockedLog is a process's standard error as read so far.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func httpGatewayArgs(t *testing.T, addr string, args ...string) *lockedLog {
	cmd := exec.Command(os.Args[0], append([]string{"gateway", "--listen", addr}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1", "USER=tester")
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log := &lockedLog{}
	ready, read := make(chan bool, 2), make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-read:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-read
		}
		cmd.Wait()
	})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			log.mu.Lock()
			log.b.WriteString(sc.Text() + "\n")
			log.mu.Unlock()
			if strings.Contains(sc.Text(), "serving Streamable HTTP") {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("gateway did not start:\n%s", log.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("gateway did not start in 20s")
	}
	return log
}

// TestIdentityHTTP: gateway --listen with identity. No token or a bad one
// gets 401 pointing to the resource metadata; three people get their own
// sessions and different verdicts under one policy; what one reads does
// not taint what another sends; a session cannot be ridden with another
// token; no token reaches a server; a real MCP client follows the 401 to
// a token; and the log verifies and names each principal.
func TestIdentityHTTP(t *testing.T) {
	idp := newTestIdP(t)
	dir := t.TempDir()
	server := sdkServer(t, dir)
	port := freePort(t)
	audience := "http://127.0.0.1:" + port + "/mcp"

	// The web server is reached over HTTP through a proxy that keeps
	// every Authorization header it sees.
	web := exec.Command(server, "-listen", "127.0.0.1:0")
	webOut, _ := web.StdoutPipe()
	if err := web.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { web.Process.Kill(); web.Wait() })
	line, err := bufio.NewReader(webOut).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(strings.TrimSpace(line))
	var seenAuth []string
	var seenMu sync.Mutex
	rp := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" {
			seenMu.Lock()
			seenAuth = append(seenAuth, a)
			seenMu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	envFile := filepath.Join(dir, "server.env")
	writeTestFile(t, dir, "policy.yaml", `version: 1
name: by-scope
rules:
  - {id: echo-readers, tool: echo, scopes: [fs.read], action: allow}
  - {id: send-senders, tool: send, scopes: [mail.send], action: allow}
tools:
  send: {exfiltrating: true, sink_params: [text]}
`)
	config := writeTestFile(t, dir, "gw.yaml", "policy: policy.yaml\naudit: gw.audit.jsonl\nidentity:\n  issuer: "+idp.issuer+"\n  audience: "+audience+
		"\n  groups: {engineering: [fs.read], sales: [fs.read, mail.send]}\nservers:\n  go:\n    command: sh\n    args: [-c, 'env >> "+envFile+"; exec "+server+"']\n  web:\n    url: "+front.URL+target.Path+"\n")
	gwLog := httpGateway(t, config, "127.0.0.1:"+port)

	// No token: 401, and the way to the issuer.
	resp, err := http.Post(audience, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	metaURL := "http://127.0.0.1:" + port + "/.well-known/oauth-protected-resource/mcp"
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Bearer resource_metadata="`+metaURL+`"` {
		t.Fatalf("no token: %s, WWW-Authenticate %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	resp, err = http.Get(metaURL)
	if err != nil {
		t.Fatal(err)
	}
	var meta oauthex.ProtectedResourceMetadata
	if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil || meta.Resource != audience || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != idp.issuer {
		t.Fatalf("resource metadata: %v %+v", err, meta)
	}
	resp.Body.Close()

	// Every bad token: 401 with its reason.
	for name, bad := range idp.badTokens(t, audience) {
		resp, body := postJSON(t, audience, bad.tok, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "token refused ("+bad.reason+")") ||
			resp.Header.Get("WWW-Authenticate") != `Bearer resource_metadata="`+metaURL+`", error="invalid_token"` {
			t.Errorf("%s: %s %q, WWW-Authenticate %q", name, resp.Status, body, resp.Header.Get("WWW-Authenticate"))
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connect := func(token, version string) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "id-http", Version: "0"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: audience, HTTPClient: &http.Client{Transport: bearer(token)}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, gwLog.String())
		}
		return cs
	}
	// verdict is how the gateway answered: allow, or the check that
	// refused (an ask the client cannot put to a human is refused too).
	verdict := func(cs *mcp.ClientSession, tool, text string) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": text}})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if !res.IsError {
			return "allow"
		}
		msg := res.Content[0].(*mcp.TextContent).Text
		for _, v := range []string{"scope", "taint", "approval"} {
			if strings.Contains(msg, v) {
				return v
			}
		}
		return msg
	}
	tokens := map[string]string{
		"ana": idp.rsaToken(map[string]any{"sub": "ana", "aud": audience, "groups": []any{"engineering"}}),
		"ben": idp.ecToken(map[string]any{"sub": "ben", "aud": audience, "groups": []any{"sales"}}),
		"cho": idp.rsaToken(map[string]any{"sub": "cho", "aud": audience, "groups": []any{"contractors"}}),
		"dee": idp.ecToken(map[string]any{"sub": "dee", "aud": audience, "groups": []any{"sales"}}),
	}
	for _, c := range []struct {
		who, version string
		want         [3]string // echo, web's echo, send
	}{
		{"ana", "2025-11-25", [3]string{"allow", "allow", "scope"}},
		// An unknown destination is asked about; this client cannot ask.
		{"ben", "2026-07-28", [3]string{"allow", "allow", "approval"}},
		{"cho", "2025-11-25", [3]string{"scope", "scope", "scope"}},
	} {
		cs := connect(tokens[c.who], c.version)
		if got := [3]string{verdict(cs, "go.echo", "hi"), verdict(cs, "web.echo", "hi"), verdict(cs, "go.send", "hi")}; got != c.want {
			t.Errorf("%s: echo, web echo, send: %q, want %q", c.who, got, c.want)
		}
		cs.Close()
	}

	// dee reads an address; her send there is denied, ben's is not.
	dee, ben := connect(tokens["dee"], "2025-11-25"), connect(tokens["ben"], "2025-11-25")
	verdict(dee, "go.echo", "write to mallory@evil.example")
	if v := verdict(dee, "go.send", "mallory@evil.example"); v != "taint" {
		t.Errorf("dee's send to an address she read: %q, want denied by taint", v)
	}
	if v := verdict(ben, "go.send", "mallory@evil.example"); v != "approval" {
		t.Errorf("ben's send where dee read: %q, want asked as any unknown destination", v)
	}
	ben.Close()

	// dee's session, ridden with ben's token, or with a token of dee's
	// that names other groups: refused.
	for who, tok := range map[string]string{"ben": tokens["ben"], "dee as an engineer": idp.rsaToken(map[string]any{"sub": "dee", "aud": audience, "groups": []any{"engineering"}})} {
		resp, _ := postJSON(t, audience, tok, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, map[string]string{
			"Accept": "application/json, text/event-stream", "Mcp-Session-Id": dee.ID(), "Mcp-Protocol-Version": "2025-11-25"})
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("dee's session under %s's token: %s, want 403", who, resp.Status)
		}
	}
	dee.Close()

	// A real MCP client follows the 401 to the metadata, the issuer, and
	// a token of its own.
	idp.user = map[string]any{"sub": "eve", "groups": []any{"engineering"}}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	oauth, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient: &oauthex.ClientCredentials{ClientID: "mcp-client"},
		RedirectURL:         "http://127.0.0.1:1/callback",
		AuthorizationCodeFetcher: func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			resp, err := noRedirect.Get(a.URL)
			if err != nil {
				return nil, err
			}
			resp.Body.Close()
			to, err := url.Parse(resp.Header.Get("Location"))
			if err != nil {
				return nil, err
			}
			return &auth.AuthorizationResult{Code: to.Query().Get("code"), State: to.Query().Get("state")}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	eve, err := mcp.NewClient(&mcp.Implementation{Name: "oauth-client", Version: "0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: audience, OAuthHandler: oauth}, nil)
	if err != nil {
		t.Fatalf("OAuth client: %v\n%s", err, gwLog.String())
	}
	if e, s := verdict(eve, "go.echo", "hi"), verdict(eve, "go.send", "hi"); e != "allow" || s != "scope" {
		t.Errorf("eve, signed in through the OAuth flow: echo %q, send %q", e, s)
	}
	eve.Close()

	seenMu.Lock()
	if len(seenAuth) > 0 {
		t.Errorf("the HTTP server behind the gateway was sent Authorization: %q", seenAuth)
	}
	seenMu.Unlock()
	env, err := os.ReadFile(envFile)
	if err != nil || strings.Count(string(env), "USER=tester") < 5 || strings.Contains(string(env), "eyJ") {
		t.Errorf("servers' environments (%v): one per principal, none holding a token:\n%s", err, env)
	}

	audit := filepath.Join(dir, "gw.audit.jsonl")
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	for who, tok := range tokens {
		if strings.Contains(string(data), strings.Split(tok, ".")[2]) {
			t.Errorf("the log holds %s's token", who)
		}
		if !strings.Contains(string(data), `"subject":"`+who+`"`) {
			t.Errorf("no session record names %s", who)
		}
	}
	if !strings.Contains(string(data), `"subject":"eve","groups":["engineering"],"scopes":["fs.read"],"authenticated":"oidc","issuer":"`+idp.issuer+`","key_id":"rsa-1"`) {
		t.Errorf("eve's session record:\n%s", data)
	}
	verifiesWithCalls(t, audit, 14)

	// The offline tools read the interleaved sessions of one log.
	var out, errb strings.Builder
	if code := run([]string{"shadow", "--candidate", filepath.Join(dir, "policy.yaml"), "--format", "json", audit}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), `"calls":14,"counts":{"newly-allowed":0,"newly-asked":0,"newly-denied":0,"unchanged":14`) {
		t.Errorf("shadow over the gateway's sessions: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"ablate", "--format", "json", audit}, nil, &out, &errb); code == 2 || !strings.Contains(out.String(), `"type":"check"`) {
		t.Errorf("ablate over the gateway's sessions: exit %d\n%s%s", code, out.String(), errb.String())
	}
	pack := filepath.Join(dir, "pack.md")
	if code := run([]string{"report", "--audit", audit, "-o", pack}, nil, &out, &errb); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errb.String())
	}
	md, _ := os.ReadFile(pack)
	for _, who := range []string{"| ana ", "| ben ", "| cho ", "| dee ", "| eve "} {
		if !strings.Contains(string(md), who) {
			t.Errorf("the pack's Who acted lacks %q", who)
		}
	}
}

// TestIdentityHTTPMaxPrincipals: past --max-principals, a new principal
// is refused and those served go on.
func TestIdentityHTTPMaxPrincipals(t *testing.T) {
	idp := newTestIdP(t)
	dir := t.TempDir()
	server := sdkServer(t, dir)
	port := freePort(t)
	audience := "http://127.0.0.1:" + port + "/"
	writeTestFile(t, dir, "policy.yaml", "version: 1\nrules:\n  - {id: echo-ok, tool: echo, action: allow}\n")
	config := writeTestFile(t, dir, "gw.yaml", "policy: policy.yaml\naudit: gw.audit.jsonl\nidentity: {issuer: "+idp.issuer+", audience: '"+audience+"'}\nservers:\n  go:\n    command: "+server+"\n")
	gwLog := httpGatewayArgs(t, "127.0.0.1:"+port, "--config", config, "--max-principals", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	echo := func(who string) (string, error) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: who, Version: "0"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: audience, HTTPClient: &http.Client{Transport: bearer(idp.rsaToken(map[string]any{"sub": who, "aud": audience}))}}, nil)
		if err != nil {
			return "", err
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "go.echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil {
			return "", err
		}
		return res.Content[0].(*mcp.TextContent).Text, nil
	}
	if out, err := echo("ana"); err != nil || out != "echo: hi" {
		t.Fatalf("ana: %q %v", out, err)
	}
	if out, err := echo("ben"); err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("ben, one principal too many: %q %v", out, err)
	}
	resp, body := postJSON(t, audience, idp.rsaToken(map[string]any{"sub": "ben", "aud": audience}), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "already serves 1 principal (--max-principals)") {
		t.Errorf("ben, one principal too many: %s %s", resp.Status, body)
	}
	if !strings.Contains(gwLog.String(), "refused a session: the gateway already serves 1 principal") || !strings.Contains(gwLog.String(), `-1 acts for "ana"`) {
		t.Errorf("the operator was not told:\n%s", gwLog.String())
	}
	if out, err := echo("ana"); err != nil || out != "echo: hi" {
		t.Errorf("ana again: %q %v", out, err)
	}
}
