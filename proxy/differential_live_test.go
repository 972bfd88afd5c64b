package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
)

// The live half of the differential test: the proxy between a scripted
// client and a scripted server, on the trace's clock.

// at is an event's time as the recorder stamps it.
func at(ev *replay.Event) time.Time {
	if !ev.At.IsZero() {
		return ev.At
	}
	return replay.Epoch.Add(time.Duration(ev.Line) * time.Second)
}

type diffClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *diffClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *diffClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// live drives the shaped trace through the proxy, a session at a time,
// all into one log.
func (d *diffRun) live() (recorded, string) {
	dir := d.t.TempDir()
	logPath := filepath.Join(dir, "audit.jsonl")
	w, err := chain.Open(logPath, chain.Sync)
	if err != nil {
		d.t.Fatal(err)
	}
	ev := chain.OpenEvidence(chain.EvidenceDir(logPath))
	clock := &diffClock{}
	elicit := false
	for i := range d.events {
		if g := d.events[i].Grant; g != nil && g.Approver == audit.ElicitationApprover {
			elicit = true
		}
	}
	for i := 0; i < len(d.events); {
		next, why := d.session(i, w, logPath, ev, clock, elicit)
		if why != "" {
			w.Close()
			return recorded{}, why
		}
		i = next
	}
	if err := w.Close(); err != nil {
		d.t.Fatal(err)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		d.t.Fatal(err)
	}
	return readLog(d.t, b, ev.Dir), ""
}

// session drives the session starting at event i, returning the index
// after its end.
func (d *diffRun) session(i int, w *chain.Writer, logPath string, ev chain.Evidence, clock *diffClock, elicit bool) (int, string) {
	t := d.t
	st := d.events[i].Start
	clock.set(at(&d.events[i]))
	stderr := &lockedBuffer{}
	opt := Options{Policy: d.pol, Log: w, Evidence: ev, Server: st.Server, Session: st.Session, Principal: st.Principal,
		Secret: diffSecret, Approvals: testApprovals(t, logPath), ApproverKeys: []string{d.vkey},
		Stderr: stderr, Now: clock.now, CallTimeout: 30 * time.Second, AskTimeout: 30 * time.Second}
	clientR, proxyW := io.Pipe()
	proxyR, clientW := io.Pipe()
	serverR, toServer := io.Pipe()
	fromServer, serverW := io.Pipe()
	srv := &scripted{t: t, clock: clock, w: serverW, outputs: map[string]*replay.Event{}, reads: map[string]any{}}
	srv.tools = d.lines[i]["start"].(map[string]any)["tools"].([]any)
	end := len(d.events)
	for j := i + 1; j < len(d.events); j++ {
		if d.events[j].Start != nil {
			end = j
			break
		}
		if o := d.events[j].Output; o != nil && o.Call != "" {
			srv.outputs[o.Call] = &d.events[j]
			srv.bodies = append(srv.bodies, d.lines[j]["output"].(map[string]any))
		}
	}
	if !d.events[end-1].End {
		return 0, "a session that does not end: the gateway always writes an end record"
	}
	p := New(opt, proxyR, proxyW, fromServer, toServer)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx) }()
	go srv.serve(serverR)
	sessions := countIn(t, logPath, `"kind":"session"`)
	c := newScriptClient(t, clientR, clientW)
	caps := map[string]any{}
	if elicit {
		caps["elicitation"] = map[string]any{}
	}
	c.request("init", "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": caps,
		"clientInfo": map[string]any{"name": "differential", "version": "0"}})
	c.wait("init", nil)
	c.notify("notifications/initialized")
	waitFor(t, logPath, `"kind":"session"`, sessions+1, stderr)
	// The answer to initialize is recorded right after the session: on the
	// start's time, before the clock moves on.
	waitFor(t, logPath, `"channel":"initialize"`, sessions+1, stderr)
	for j := i + 1; j < end; j++ {
		e := &d.events[j]
		switch {
		case e.Call != nil:
			clock.set(at(e))
			c.request(e.Call.ID, "tools/call", map[string]any{"name": e.Call.Tool, "arguments": e.Call.Args})
			c.wait(e.Call.ID, func(m map[string]any) map[string]any {
				g := &d.events[j+1]
				if g.Grant == nil || g.Grant.Call != e.Call.ID || g.Grant.Approver != audit.ElicitationApprover {
					t.Fatalf("the gateway elicited an answer to %s, which the trace answers otherwise", e.Call.ID)
				}
				clock.set(at(g))
				if g.Grant.Approve {
					return map[string]any{"action": "accept", "content": map[string]any{"approve": true}}
				}
				return map[string]any{"action": "decline"}
			})
		case e.Grant != nil && e.Grant.Approver != audit.ElicitationApprover:
			clock.set(at(e))
			d.answer(opt, e, logPath)
		case e.Output != nil && e.Output.Channel == "resources/read":
			clock.set(at(e))
			id := fmt.Sprintf("read-%d", j)
			srv.mu.Lock()
			srv.reads[id] = d.lines[j]["output"].(map[string]any)["structured"]
			srv.mu.Unlock()
			c.request(id, "resources/read", map[string]any{"uri": "mail://inbox/7"})
			c.wait(id, nil)
		case e.Output != nil && e.Output.Channel == "notifications/message":
			clock.set(at(e))
			body := d.lines[j]["output"].(map[string]any)
			params := map[string]any{"level": "info", "logger": str(body, "text")}
			if v, ok := body["structured"]; ok {
				params["data"] = v
			}
			srv.send(map[string]any{"method": "notifications/message", "params": params})
			c.waitMethod("notifications/message")
		case e.Tools != nil:
			clock.set(at(e))
			n := countIn(t, logPath, `"kind":"tools"`)
			srv.relist(d.lines[j]["tools"].(map[string]any)["tools"].([]any))
			waitFor(t, logPath, `"kind":"tools"`, n+1, stderr)
		case e.End:
			clock.set(at(e))
			clientW.Close()
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("proxy: %v", err)
	}
	serverW.Close()
	if left := srv.unused(); len(left) > 0 {
		t.Errorf("outputs never asked for: %v\nstderr: %s", left, stderr.String())
	}
	return end, ""
}

// answer signs an out-of-band answer to a pending ask, as bailiff approve
// does, at the grant's time.
func (d *diffRun) answer(opt Options, e *replay.Event, logPath string) {
	g := e.Grant
	var digest, tool string
	b, _ := os.ReadFile(logPath)
	for l := range bytes.SplitSeq(bytes.TrimSpace(b), []byte("\n")) {
		r := decodeLine(d.t, l)
		if str(r, "kind") == "call" && str(r, "call") == g.Call && str(r, "session") == opt.Session {
			digest, tool = str(r, "digest"), str(r, "tool")
		}
	}
	answer := "decline"
	if g.Approve {
		answer = "approve"
	}
	ap := audit.Approval{ID: g.ID, Kind: audit.ApproveCall, Session: opt.Session, ToolRef: engine.ToolRef{Server: opt.Server, Tool: tool}, Digest: digest, Answer: answer, Time: at(e).UTC().Format(chain.TimeFormat)}
	if _, err := opt.Approvals.Decide(ap, d.skey); err != nil {
		d.t.Fatalf("answer %s: %v", g.ID, err)
	}
}

func countIn(t *testing.T, path, s string) int {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte(s))
}

// waitFor waits until the log holds n records with s: what the proxy
// writes on its own (the session record, a relist) is waited for before
// the clock moves on.
func waitFor(t *testing.T, path, s string, n int, stderr *lockedBuffer) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if countIn(t, path, s) >= n {
			return
		}
	}
	t.Fatalf("the log never held %d records with %s\nstderr: %s", n, s, stderr.String())
}

func initializeResult() map[string]any {
	return map[string]any{"protocolVersion": "2025-11-25",
		"capabilities": map[string]any{"tools": map[string]any{"listChanged": true}, "logging": map[string]any{}},
		"serverInfo":   map[string]any{"name": "scripted", "version": "0"}}
}

// scripted is a server that lists the trace's tools and answers each call
// with the trace's output for it, on the trace's clock.
type scripted struct {
	t       *testing.T
	clock   *diffClock
	mu      sync.Mutex
	w       io.Writer
	tools   []any
	outputs map[string]*replay.Event // by call id (the client's request id)
	reads   map[string]any           // resources/read results, by request id
	bodies  []map[string]any
	used    map[string]bool
}

func (s *scripted) send(m map[string]any) {
	m["jsonrpc"] = "2.0"
	b, _ := json.Marshal(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.Write(append(b, '\n'))
}

func (s *scripted) relist(tools []any) {
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
	s.send(map[string]any{"method": "notifications/tools/list_changed"})
}

func (s *scripted) serve(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		m := decodeLine(s.t, sc.Bytes())
		id, isReq := m["id"]
		method := str(m, "method")
		if !isReq || method == "" {
			continue
		}
		var result any
		switch method {
		case "initialize":
			result = initializeResult()
		case "tools/list":
			s.mu.Lock()
			result = map[string]any{"tools": s.tools}
			s.mu.Unlock()
		case "tools/call":
			result = s.call(fmt.Sprint(id))
		case "resources/read":
			s.mu.Lock()
			result = s.reads[fmt.Sprint(id)]
			s.mu.Unlock()
		case "ping":
			result = map[string]any{}
		default:
			s.send(map[string]any{"id": id, "error": map[string]any{"code": -32601, "message": "not served"}})
			continue
		}
		s.send(map[string]any{"id": id, "result": result})
	}
}

func (s *scripted) call(id string) map[string]any {
	s.mu.Lock()
	e, ok := s.outputs[id]
	if s.used == nil {
		s.used = map[string]bool{}
	}
	first := !s.used[id]
	s.used[id] = true
	s.mu.Unlock()
	if !ok || !first {
		s.t.Errorf("the gateway forwarded call %s, for which the trace has no output", id)
		return map[string]any{"content": []any{}}
	}
	var body map[string]any
	for _, b := range s.bodies {
		if str(b, "call") == id {
			body = b
		}
	}
	s.clock.set(at(e))
	res := map[string]any{"content": body["content"]}
	if v, ok := body["structured"]; ok {
		res["structuredContent"] = v
	}
	if e.Output.Error {
		res["isError"] = true
	}
	return res
}

func (s *scripted) unused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var left []string
	for id := range s.outputs {
		if !s.used[id] {
			left = append(left, id)
		}
	}
	sort.Strings(left)
	return left
}

// scriptClient is a client speaking JSON-RPC lines to the proxy.
type scriptClient struct {
	t  *testing.T
	w  io.Writer
	in chan map[string]any
}

func newScriptClient(t *testing.T, r io.Reader, w io.Writer) *scriptClient {
	c := &scriptClient{t: t, w: w, in: make(chan map[string]any, 16)}
	go func() {
		defer close(c.in)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			c.in <- decodeLine(t, sc.Bytes())
		}
		io.Copy(io.Discard, r)
	}()
	return c
}

// waitMethod reads until the proxy relays a message of method.
func (c *scriptClient) waitMethod(method string) {
	c.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				c.t.Fatalf("the proxy closed before relaying %s", method)
			}
			if m["method"] == method {
				return
			}
		case <-timeout:
			c.t.Fatalf("the proxy never relayed %s", method)
		}
	}
}

func (c *scriptClient) send(m map[string]any) {
	m["jsonrpc"] = "2.0"
	b, _ := json.Marshal(m)
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("write to the proxy: %v", err)
	}
}

func (c *scriptClient) request(id, method string, params any) {
	c.send(map[string]any{"id": id, "method": method, "params": params})
}

func (c *scriptClient) notify(method string) { c.send(map[string]any{"method": method}) }

// wait reads until the response to id, answering the proxy's
// elicitation requests with elicit (nil: none may come).
func (c *scriptClient) wait(id string, elicit func(map[string]any) map[string]any) map[string]any {
	c.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				c.t.Fatalf("the proxy closed before answering %s", id)
			}
			if m["method"] == "elicitation/create" {
				if elicit == nil {
					c.t.Fatalf("the gateway elicited while %s waited for no answer", id)
				}
				c.send(map[string]any{"id": m["id"], "result": elicit(m)})
				continue
			}
			if _, hasMethod := m["method"]; hasMethod {
				if rid, ok := m["id"]; ok {
					c.send(map[string]any{"id": rid, "error": map[string]any{"code": -32601, "message": "not served"}})
				}
				continue
			}
			if fmt.Sprint(m["id"]) == id {
				return m
			}
		case <-timeout:
			c.t.Fatalf("no answer to %s", id)
		}
	}
}
