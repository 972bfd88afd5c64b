package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bailiff/engine"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/audit"
	"bailiff/chain"
)

// TestAttackFutureSignedTimeStretchesGrant: takeAnswer accepts a signed
// time up to clockSkew (a minute) ahead of the gateway's clock, and
// collectGrants now sets the grant's expiry from that time. An approver
// (or an approver's clock) that signs a minute ahead gives a grant that
// is still fresh TTL + 1 minute after the gateway took it: longer than
// the policy's TTL from any moment the gateway saw. The expiry should be
// bounded by the gateway's own time (min(signed, now) + TTL).
func TestAttackFutureSignedTimeStretchesGrant(t *testing.T) {
	lee, leePub := approverKey(t, "lee")
	s := startFake(t, "version: 1\nrules:\n  - {id: echo, tool: echo, action: ask}\n", leePub)
	args := map[string]any{"message": "hi"}
	if r := s.call("echo", args); !r.IsError || !strings.Contains(text(r), "bailiff approve") {
		t.Fatalf("the ask: %q", text(r))
	}
	list, err := s.options.Approvals.List()
	if err != nil || len(list) != 1 {
		t.Fatalf("pending: %v %v", list, err)
	}
	ap := s.recorded(list[0].ID)
	ap.Answer, ap.Time = "approve", time.Now().Add(59*time.Second).UTC().Format(chain.TimeFormat)
	if _, err := s.options.Approvals.Decide(ap, lee); err != nil {
		t.Fatal(err)
	}
	if r := s.call("echo", args); r.IsError {
		t.Fatalf("the approved retry: %q\n%s", text(r), s.stderr.String())
	}
	s.close()
	data, err := os.ReadFile(s.log)
	if err != nil {
		t.Fatal(err)
	}
	rd := chain.NewReader(bytes.NewReader(data))
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		if rec.Kind != chain.KindGrant {
			continue
		}
		var b audit.GrantBody
		if err := chain.DecodeBody(rec.Body, &b); err != nil {
			t.Fatal(err)
		}
		exp, _ := time.Parse(chain.TimeFormat, b.Expires)
		ttl := s.options.Policy.ApprovalTTL()
		if life := exp.Sub(rec.TS); life > ttl {
			t.Fatalf("grant %s was taken at %s and expires at %s: %s of life, more than the policy's TTL %s", b.Grant, rec.TS.Format(time.RFC3339Nano), b.Expires, life, ttl)
		}
		return
	}
	t.Fatal("no grant record")
}

// startFake is start with an in-process server listing one tool, echo,
// that answers every call "ok": no node peer needed.
func startFake(t *testing.T, policy, approver string) *session {
	t.Helper()
	pol, err := engine.Load("test policy", []byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := chain.Open(logPath, chain.Sync)
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	opt := Options{Policy: pol, Log: w, Evidence: chain.OpenEvidence(chain.EvidenceDir(logPath)), Server: "fake",
		Session: "test-session", Principal: engine.Principal{Subject: "ana"}, Stderr: stderr,
		CallTimeout: 30 * time.Second, AskTimeout: 30 * time.Second,
		Approvals: testApprovals(t, logPath), ApproverKeys: []string{approver}}
	clientR, proxyW := io.Pipe()
	proxyR, clientW := io.Pipe()
	serverR, toServer := io.Pipe()
	fromServer, serverW := io.Pipe()
	go func() {
		sc := bufio.NewScanner(serverR)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			id, ok := m["id"]
			method, _ := m["method"].(string)
			if !ok || method == "" {
				continue
			}
			var result any = map[string]any{}
			switch method {
			case "initialize":
				result = initializeResult()
			case "tools/list":
				result = map[string]any{"tools": []any{map[string]any{"name": "echo", "inputSchema": map[string]any{"type": "object"}}}}
			case "tools/call":
				result = map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}}
			}
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
			serverW.Write(append(b, '\n'))
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	p := New(opt, proxyR, proxyW, fromServer, toServer)
	go func() {
		err := p.Serve(ctx)
		proxyW.Close()
		serverW.Close()
		w.Close()
		done <- err
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "bailiff-test", Version: "0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	cs, err := client.Connect(cctx, &mcp.IOTransport{Reader: clientR, Writer: clientW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		cancel()
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	ss := &session{t: t, log: logPath, cs: cs, done: done, cancel: cancel, stderr: stderr, options: opt}
	t.Cleanup(func() { ss.close() })
	return ss
}
