package proxy

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

// postInit posts one initialize without a session, as a new client does.
func postInit(t testing.TB, client *http.Client, url string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(initBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestListenSessionCap: with a cap of 3, a fourth session is refused
// with 503, the reason and Retry-After, while the first still lists its
// tools; once one session is ended (DELETE) a new one is admitted.
func TestListenSessionCap(t *testing.T) {
	bin := sdkServer(t)
	stderr := &lockedBuffer{}
	l := startListening(t, gatewaySDKPolicy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}}, HTTPOptions{MaxSessions: 3},
		func(o *Options, _ string) { o.Stderr = stderr })
	s1, s2 := l.connect(t, "2025-11-25"), l.connect(t, "2025-11-25")
	defer s1.Close()
	s3 := l.connect(t, "2025-11-25")
	defer s3.Close()
	code, body, h := postInit(t, http.DefaultClient, l.url)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "session cap is reached: 3 sessions open") || h.Get("Retry-After") == "" {
		t.Fatalf("a fourth session: %d %q Retry-After %q, want 503 naming the cap of 3, with Retry-After", code, body, h.Get("Retry-After"))
	}
	if !strings.Contains(body, `"id":1`) || !strings.Contains(body, `"error"`) {
		t.Errorf("the refusal is not a JSON-RPC error for the initialize: %s", body)
	}
	// The operator is told too, once for a burst of refusals.
	for range 5 {
		postInit(t, http.DefaultClient, l.url)
	}
	if got := stderr.String(); strings.Count(got, "refused") != 1 || !strings.Contains(got, "refused 1 new HTTP session(s); the last: the gateway's session cap is reached") {
		t.Errorf("the gateway's log of refusals:\n%s\nwant one line naming the cap", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := s1.ListTools(ctx, nil); err != nil {
		t.Fatalf("an open session's tools/list while the cap is reached: %v", err)
	}
	if err := s2.Close(); err != nil {
		t.Fatalf("ending a session: %v", err)
	}
	// The server lists a session until its connection is done, just
	// after the DELETE is answered.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body, _ = postInit(t, http.DefaultClient, l.url)
		if code == http.StatusOK || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code != http.StatusOK {
		t.Fatalf("a session after one was ended: %d %q, want 200", code, body)
	}
}

// TestListenInitializeRate: a burst of initialize from one address past
// InitBurst is refused with 503, the reason and Retry-After, while a
// session opened before goes on.
func TestListenInitializeRate(t *testing.T) {
	bin := sdkServer(t)
	l := startListening(t, gatewaySDKPolicy, []Upstream{{Name: "go", Cmd: exec.Command(bin)}}, HTTPOptions{InitBurst: 3, InitRate: 0.01})
	s1 := l.connect(t, "2025-11-25")
	defer s1.Close()
	for i := 0; i < 2; i++ {
		if code, body, _ := postInit(t, http.DefaultClient, l.url); code != http.StatusOK {
			t.Fatalf("initialize %d of the burst: %d %q, want 200", i+2, code, body)
		}
	}
	code, body, h := postInit(t, http.DefaultClient, l.url)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "too many initialize requests from 127.0.0.1") || h.Get("Retry-After") == "" {
		t.Fatalf("initialize past the burst: %d %q Retry-After %q, want 503 naming the address, with Retry-After", code, body, h.Get("Retry-After"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := s1.ListTools(ctx, nil); err != nil {
		t.Fatalf("an open session's tools/list while its address is limited: %v", err)
	}
}
