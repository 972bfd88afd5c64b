package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/verify"
)

// The real MCP servers these tests run are installed from the npm
// registry into testdata/peers by .ci/run (npm ci). Without them the tests
// skip, unless BAILIFF_PEERS_REQUIRED is set, as CI sets it: then a
// missing peer is a failure, never a silent pass.
const peersDir = "testdata/peers/node_modules"

func peer(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(peersDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		what := "peer " + rel + " is"
		if rel == "" {
			// A test with its own script server needs the peers' node
			// set-up, not one package.
			what = "the test peers are"
		}
		if os.Getenv("BAILIFF_PEERS_REQUIRED") != "" {
			t.Fatalf("%s not installed: run npm ci --prefix proxy/testdata/peers", what)
		}
		t.Skipf("%s not installed (npm ci --prefix proxy/testdata/peers)", what)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	return p
}

// session is one proxy between a real SDK client and a real server.
type session struct {
	t       *testing.T
	log     string
	cs      *mcp.ClientSession
	done    chan error
	cancel  context.CancelFunc
	stderr  *lockedBuffer
	closed  bool
	options Options
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type setup struct {
	policy   string
	server   string
	command  []string
	env      []string
	elicit   func(*mcp.ElicitRequest) (*mcp.ElicitResult, error)
	subject  string
	email    string // the principal's own address
	scopes   []string
	approval bool
	// approvers are the approver public keys the proxy trusts.
	approvers []string
	logDir    string        // where the audit log goes (default a new temp dir)
	timeout   time.Duration // how long the server may take to answer a call
	// upstreams, when set, run a gateway in front of them instead.
	upstreams []Upstream
	// client, when set, adds to the test client's options (handlers for
	// sampling, logging, …).
	client func(*mcp.ClientOptions)
	// version is the newest revision the client offers (default
	// 2025-11-25).
	version string
	// ledger, when set, is the proxy's tenant ledger.
	ledger *audit.Ledger
}

func start(t *testing.T, s setup) *session {
	t.Helper()
	dir := s.logDir
	if dir == "" {
		dir = t.TempDir()
	}
	pol, err := engine.Load("test policy", []byte(s.policy))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "audit.jsonl")
	w, err := chain.Open(logPath, chain.Sync)
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	opt := Options{Policy: pol, Log: w, Evidence: chain.OpenEvidence(chain.EvidenceDir(logPath)), Server: s.server,
		Session: "test-session", Principal: engine.Principal{Subject: s.subject, Scopes: s.scopes, Email: s.email}, Secret: []byte("0123456789abcdef0123456789abcdef"),
		Stderr: stderr, CallTimeout: 30 * time.Second, AskTimeout: 30 * time.Second}
	if s.timeout > 0 {
		opt.CallTimeout = s.timeout
	}
	opt.Ledger = s.ledger
	if s.approval {
		opt.Approvals = testApprovals(t, logPath)
		opt.ApproverKeys = s.approvers
	}
	clientR, proxyW := io.Pipe()
	proxyR, clientW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		var err error
		if s.upstreams != nil {
			err = RunGateway(ctx, opt, proxyR, proxyW, s.upstreams)
		} else {
			cmd := exec.Command(s.command[0], s.command[1:]...)
			cmd.Env = append(os.Environ(), s.env...)
			err = Run(ctx, opt, proxyR, proxyW, cmd)
		}
		proxyW.Close()
		w.Close()
		done <- err
	}()
	copts := &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
	if s.elicit != nil {
		copts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return s.elicit(r) }
	}
	if s.client != nil {
		s.client(copts)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bailiff-test", Version: "0"}, copts)
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	version := s.version
	if version == "" {
		version = "2025-11-25"
	}
	cs, err := client.Connect(cctx, &mcp.IOTransport{Reader: clientR, Writer: clientW}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		cancel()
		t.Fatalf("connect through the proxy: %v\nstderr:\n%s", err, stderr.String())
	}
	ss := &session{t: t, log: logPath, cs: cs, done: done, cancel: cancel, stderr: stderr, options: opt}
	t.Cleanup(func() { ss.close() })
	return ss
}

// startGateway is start for a gateway in front of several servers.
func startGateway(t *testing.T, policy string, ups []Upstream) *session {
	t.Helper()
	return start(t, setup{policy: policy, server: "gateway", upstreams: ups})
}

func (s *session) call(name string, args map[string]any) *mcp.CallToolResult {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		s.t.Fatalf("call %s: %v\nstderr:\n%s", name, err, s.stderr.String())
	}
	return res
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// close ends the session and waits for the proxy to write its end record.
func (s *session) close() {
	if s.closed {
		return
	}
	s.closed = true
	s.cs.Close()
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Errorf("proxy: %v", err)
		}
	case <-time.After(20 * time.Second):
		s.cancel()
		s.t.Errorf("the proxy did not stop after the client closed")
		<-s.done
	}
}

// verify reads the session's log back: it must verify clean, and every
// live verdict must be one the engine recomputes.
func (s *session) verify() *verify.Report {
	s.t.Helper()
	s.close()
	rep := verifyClean(s.t, s.log, s.options.Evidence)
	if rep.Sessions != 1 {
		s.t.Errorf("the log holds %d sessions, want 1", rep.Sessions)
	}
	return rep
}

// smtpSink is a loopback SMTP server that accepts every message and
// records its recipients.
type smtpSink struct {
	ln   net.Listener
	mu   sync.Mutex
	rcpt []string
}

func newSMTPSink(t *testing.T) *smtpSink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &smtpSink{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *smtpSink) port() string { return strings.Split(s.ln.Addr().String(), ":")[1] }

func (s *smtpSink) recipients() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rcpt...)
}

func (s *smtpSink) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	say := func(l string) { io.WriteString(c, l+"\r\n") }
	say("220 sink ESMTP")
	var pending []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			say("250-sink")
			say("250-AUTH PLAIN LOGIN")
			say("250 OK")
		case strings.HasPrefix(cmd, "AUTH PLAIN"):
			if len(strings.Fields(cmd)) == 2 {
				say("334 ")
				r.ReadString('\n')
			}
			say("235 2.7.0 accepted")
		case strings.HasPrefix(cmd, "AUTH LOGIN"):
			if len(strings.Fields(cmd)) == 2 {
				say("334 VXNlcm5hbWU6")
				r.ReadString('\n')
			}
			say("334 UGFzc3dvcmQ6")
			r.ReadString('\n')
			say("235 2.7.0 accepted")
		case strings.HasPrefix(cmd, "MAIL FROM"):
			pending = nil
			say("250 OK")
		case strings.HasPrefix(cmd, "RCPT TO"):
			addr := strings.TrimSpace(line[len("RCPT TO:"):])
			addr = strings.Trim(strings.Fields(addr)[0], "<>")
			pending = append(pending, addr)
			say("250 OK")
		case cmd == "DATA":
			say("354 go ahead")
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" || l == ".\n" {
					break
				}
			}
			s.mu.Lock()
			s.rcpt = append(s.rcpt, pending...)
			s.mu.Unlock()
			say("250 OK queued")
		case cmd == "QUIT":
			say("221 bye")
			return
		default:
			say("250 OK")
		}
	}
}

// httpSink records every request made to it.
type httpSink struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits []string
}

func newHTTPSink(t *testing.T) *httpSink {
	s := &httpSink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits = append(s.hits, r.Method+" "+r.URL.String())
		s.mu.Unlock()
		io.WriteString(w, "received")
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *httpSink) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hits...)
}

// verifyClean reads a log back as bailiff verify does and reports every
// finding as a test error.
func verifyClean(t *testing.T, log string, ev chain.EvidenceStore) *verify.Report {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := verify.Log(log, f, ev, verify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Errorf("verify finding: %+v", f)
	}
	return rep
}
