package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
)

// TestInvalidUTF8ArgumentsRefused: the decoder turns bytes that are not
// UTF-8 (and escaped lone surrogates) into U+FFFD, so the arguments
// judged and recorded were not the ones sent, and the server, reading the
// raw bytes, could open what the engine never saw. Such a call is
// refused as invalid params, with a malformed record, and never forwarded.
func TestInvalidUTF8ArgumentsRefused(t *testing.T) {
	peer(t, "")
	script, _ := filepath.Abs("testdata/hostile-server.js")
	pol, err := engine.Load("test policy", []byte(hostilePolicy))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := chain.Open(logPath, chain.Sync)
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{Policy: pol, Log: w, Evidence: chain.OpenEvidence(chain.EvidenceDir(logPath)), Server: "mail",
		Session: "test-session", Principal: engine.Principal{Subject: "ana"}, Secret: []byte("0123456789abcdef0123456789abcdef"),
		Stderr: &lockedBuffer{}, CallTimeout: time.Second, AskTimeout: time.Second}
	clientR, proxyW := io.Pipe()
	proxyR, clientW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		_ = Run(ctx, opt, proxyR, proxyW, exec.Command("node", script))
		proxyW.Close()
		w.Close()
		close(done)
	}()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(clientR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	answer := func(id int) map[string]any {
		t.Helper()
		deadline := time.After(3 * time.Second)
		for {
			select {
			case l := <-lines:
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil && m["id"] == float64(id) {
					return m
				}
			case <-deadline:
				t.Fatalf("no answer to request %d", id)
			}
		}
	}
	send := func(s string) { fmt.Fprintln(clientW, s) }
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	answer(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for id, args := range map[int]string{3: "{\"to\":\"eve@evil.ex\xffample\"}", 4: `{"to":"eve@evil.example\ud800"}`} {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send_email","arguments":%s}}`, id, args))
		m := answer(id)
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(e["message"]), "invalid tools/call params:") {
			t.Errorf("call %d: %v, want a -32602 invalid params error", id, m)
		}
	}
	clientW.Close()
	cancel()
	<-done
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	rd := chain.NewReader(strings.NewReader(string(data)))
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		if rec.Kind == chain.KindCall {
			t.Errorf("a call record was written for a call whose arguments are not valid text: %s", rec.Body)
		}
		var b audit.MalformedBody
		if rec.Kind == chain.KindMalformed && chain.DecodeBody(rec.Body, &b) == nil {
			reasons = append(reasons, b.Reason)
		}
	}
	joined := strings.Join(reasons, "\n")
	if !strings.Contains(joined, "invalid UTF-8 at byte") || !strings.Contains(joined, `unpaired surrogate \ud800`) {
		t.Errorf("malformed records: %q, want one for each call", reasons)
	}
}
