// Package proxy is bailiff's live gateway: it sits between an MCP client
// and a real MCP server on the stdio transport, decides every tools/call
// with the engine before the server is contacted, and writes every
// decision and result to the audit log (package chain) in the format
// verify reads back.
//
// It is a message pump built on the official Go SDK's JSON-RPC layer
// (github.com/modelcontextprotocol/go-sdk/jsonrpc), not an MCP server of
// its own: everything but tools/call and tools/list passes through
// unchanged (resources, prompts, notifications, server-to-client
// requests), so the client and the server negotiate with each other.
// What it changes:
//
//   - tools/call is decoded case-sensitively with duplicate keys refused,
//     decided, written durably to the log, and only then forwarded,
//     re-encoded from exactly the arguments the engine checked. A refusal
//     is a tool result with isError set, naming the check and rule. A
//     request that cannot be read gets -32602 and a malformed record.
//   - tools/list answers lose the tools the policy denies outright.
//   - after the client's initialized notification the proxy lists the
//     server's tools itself and pins them (the session record), and
//     re-lists on list_changed.
//   - an ask goes to the human through elicitation when the client
//     supports it, and otherwise is refused with the id of a pending
//     approval that `bailiff approve` can grant for a retry.
//
// Start with Run.
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"bailiff/chain"
	"bailiff/engine"
)

// Options configure a proxy session.
type Options struct {
	Policy       *engine.Policy
	Log          *chain.Writer
	Evidence     chain.Evidence
	EvidenceSync bool
	Server       string // the upstream's name, as rules select it
	Session      string
	Principal    engine.Principal
	// Secret keys the digest of calls whose arguments the policy redacts.
	Secret    []byte
	Approvals *Approvals // where out-of-band asks wait; nil: none
	Stderr    io.Writer
	Now       func() time.Time
	// CallTimeout bounds how long the upstream may take to answer a call;
	// AskTimeout how long a human may take to answer an elicitation.
	CallTimeout time.Duration
	AskTimeout  time.Duration
}

// Proxy is one session between one client and one upstream server.
type Proxy struct {
	opt  Options
	down *wire // the client
	up   *wire // the upstream server

	pinned   chan struct{}
	pinOnce  sync.Once
	work     sync.WaitGroup // calls being handled
	pinErr   error
	nextID   int64
	idPrefix string

	mu        sync.Mutex // guards everything below
	state     *engine.State
	calls     int
	ownUp     map[string]chan *jsonrpc.Response // our requests to the server
	ownDown   map[string]chan *jsonrpc.Response // our requests to the client
	inflight  map[string]chan *jsonrpc.Response // forwarded tools/call by id
	listReqs  map[string]bool                   // the client's tools/list requests
	canElicit bool
	waiting   map[string]*engine.Call // approval id -> the call it would approve
	closed    bool
}

// Run starts the upstream command and pumps messages between it and the
// client on in/out until either side closes. The session record is written
// once the server's tools are pinned, and an end record when Run returns.
func Run(ctx context.Context, opt Options, in io.Reader, out io.Writer, cmd *exec.Cmd) error {
	upIn, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	upOut, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = opt.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start upstream: %w", err)
	}
	p := New(opt, in, out, upOut, upIn)
	err = p.Serve(ctx)
	upIn.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	return err
}

// New makes a proxy between a client (clientIn, clientOut) and a server
// (serverOut is what it writes, serverIn what it reads).
func New(opt Options, clientIn io.Reader, clientOut io.Writer, serverOut io.Reader, serverIn io.Writer) *Proxy {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Stderr == nil {
		opt.Stderr = io.Discard
	}
	if opt.CallTimeout == 0 {
		opt.CallTimeout = 2 * time.Minute
	}
	if opt.AskTimeout == 0 {
		opt.AskTimeout = 5 * time.Minute
	}
	return &Proxy{
		opt: opt, down: newWire(clientIn, clientOut), up: newWire(serverOut, serverIn),
		pinned: make(chan struct{}), idPrefix: "bailiff-" + strconv.FormatInt(opt.Now().UnixNano(), 36) + "-",
		ownUp: map[string]chan *jsonrpc.Response{}, ownDown: map[string]chan *jsonrpc.Response{},
		inflight: map[string]chan *jsonrpc.Response{}, listReqs: map[string]bool{}, waiting: map[string]*engine.Call{},
	}
}

// Serve pumps until the client or the server closes its stream (or ctx
// ends). Calls still waiting then fail, audited, and the session's end
// record is written last.
func (p *Proxy) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{}, 2)
	go func() {
		p.fromServer(ctx)
		done <- struct{}{}
	}()
	go func() {
		p.fromClient(ctx)
		done <- struct{}{}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	p.shutdown()
	cancel()
	p.work.Wait()
	p.end()
	return nil
}

func (p *Proxy) logf(format string, a ...any) {
	fmt.Fprintf(p.opt.Stderr, "bailiff: "+format+"\n", a...)
}

// key is a request id as a map key: numbers and strings never collide.
func key(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case string:
		return "s:" + v
	case int64:
		return "n:" + strconv.FormatInt(v, 10)
	case float64:
		return "n:" + strconv.FormatFloat(v, 'g', -1, 64)
	}
	return fmt.Sprintf("?:%v", id.Raw())
}

func (p *Proxy) fromClient(ctx context.Context) {
	for ctx.Err() == nil {
		line, err := p.down.read()
		if errors.Is(err, errTooLong) {
			p.malformed(jsonrpc.ID{}, nil, "request longer than the longest accepted", jsonrpc.CodeInvalidRequest)
			continue
		}
		if err != nil {
			return
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			p.malformed(jsonrpc.ID{}, line, "not a JSON-RPC message: "+err.Error(), jsonrpc.CodeParseError)
			continue
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			p.clientRequest(ctx, m)
		case *jsonrpc.Response:
			p.mu.Lock()
			ch, ours := p.ownDown[key(m.ID)]
			delete(p.ownDown, key(m.ID))
			p.mu.Unlock()
			if ours {
				ch <- m
				continue
			}
			p.toServer(m)
		}
	}
}

func (p *Proxy) clientRequest(ctx context.Context, m *jsonrpc.Request) {
	switch m.Method {
	case "tools/call":
		if !m.ID.IsValid() {
			p.malformed(m.ID, m.Params, "tools/call sent as a notification", 0)
			return
		}
		p.work.Add(1)
		go func() {
			defer p.work.Done()
			p.call(ctx, m)
		}()
		return
	case "tools/list":
		if m.ID.IsValid() {
			p.mu.Lock()
			p.listReqs[key(m.ID)] = true
			p.mu.Unlock()
		}
	case "initialize":
		var params struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
		}
		if json.Unmarshal(m.Params, &params) == nil {
			_, ok := params.Capabilities["elicitation"]
			p.mu.Lock()
			p.canElicit = ok
			p.mu.Unlock()
		}
	case "notifications/initialized":
		p.toServer(m)
		p.work.Add(1)
		go func() {
			defer p.work.Done()
			p.pin(ctx)
		}()
		return
	}
	p.toServer(m)
}

func (p *Proxy) toServer(m jsonrpc.Message) {
	if err := p.up.send(m); err != nil {
		p.logf("cannot write to the server: %v", err)
	}
}

func (p *Proxy) toClient(m jsonrpc.Message) {
	if err := p.down.send(m); err != nil {
		p.logf("cannot write to the client: %v", err)
	}
}

func (p *Proxy) fromServer(ctx context.Context) {
	for ctx.Err() == nil {
		line, err := p.up.read()
		if errors.Is(err, errTooLong) {
			p.logf("the server sent a message longer than %d bytes; dropped", maxMessage)
			continue
		}
		if err != nil {
			return
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			// stdout carries MCP messages only: the server's stray output
			// goes to stderr, never to the client.
			p.logf("the server wrote a line that is not a JSON-RPC message (dropped): %.200q", line)
			continue
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			k := key(m.ID)
			p.mu.Lock()
			own, isOwn := p.ownUp[k]
			delete(p.ownUp, k)
			call, isCall := p.inflight[k]
			delete(p.inflight, k)
			isList := p.listReqs[k]
			delete(p.listReqs, k)
			p.mu.Unlock()
			switch {
			case isOwn:
				own <- m
			case isCall:
				call <- m
			case isList:
				p.toClient(p.filterList(ctx, m))
			default:
				p.toClient(m)
			}
		case *jsonrpc.Request:
			if m.Method == "notifications/tools/list_changed" {
				p.work.Add(1)
				go func() {
					defer p.work.Done()
					p.relist(ctx)
				}()
			}
			p.toClient(m)
		}
	}
}

// shutdown answers every call still waiting on the server: it is gone.
func (p *Proxy) shutdown() {
	p.mu.Lock()
	p.closed = true
	calls := p.inflight
	p.inflight = map[string]chan *jsonrpc.Response{}
	own := p.ownUp
	p.ownUp = map[string]chan *jsonrpc.Response{}
	down := p.ownDown
	p.ownDown = map[string]chan *jsonrpc.Response{}
	p.mu.Unlock()
	for _, ch := range calls {
		close(ch)
	}
	for _, ch := range own {
		close(ch)
	}
	for _, ch := range down {
		close(ch)
	}
}

// request sends a request of the proxy's own to the server (up) or the
// client and waits for its answer.
func (p *Proxy) request(ctx context.Context, toServer bool, method string, params any, timeout time.Duration) (*jsonrpc.Response, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("the session is closed")
	}
	p.nextID++
	id, _ := jsonrpc.MakeID(p.idPrefix + strconv.FormatInt(p.nextID, 10))
	ch := make(chan *jsonrpc.Response, 1)
	table := p.ownDown
	if toServer {
		table = p.ownUp
	}
	table[key(id)] = ch
	p.mu.Unlock()
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	req := &jsonrpc.Request{ID: id, Method: method, Params: raw}
	if toServer {
		err = p.up.send(req)
	} else {
		err = p.down.send(req)
	}
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, errors.New("the session closed before an answer came")
		}
		if r.Error != nil {
			return nil, r.Error
		}
		return r, nil
	case <-t.C:
		p.mu.Lock()
		delete(table, key(id))
		p.mu.Unlock()
		return nil, fmt.Errorf("no answer to %s within %s", method, timeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// listTools asks the server for its whole tool list, page by page.
func (p *Proxy) listTools(ctx context.Context) ([]engine.ToolDef, error) {
	var defs []engine.ToolDef
	params := map[string]any{}
	for page := 0; page < 100; page++ {
		r, err := p.request(ctx, true, "tools/list", params, 30*time.Second)
		if err != nil {
			return nil, err
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(r.Result, &res); err != nil {
			return nil, fmt.Errorf("tools/list result: %v", err)
		}
		for _, t := range res.Tools {
			def, err := engine.ParseTool(t)
			if err != nil {
				// A tool that cannot be pinned cannot be called.
				p.logf("the server listed a tool that cannot be read (never callable): %v", err)
				continue
			}
			defs = append(defs, def)
		}
		if res.NextCursor == "" {
			return defs, nil
		}
		params = map[string]any{"cursor": res.NextCursor}
	}
	return nil, errors.New("tools/list paginates without end")
}

// pin lists and pins the server's tools and writes the session record.
func (p *Proxy) pin(ctx context.Context) {
	p.pinOnce.Do(func() {
		defer close(p.pinned)
		defs, err := p.listTools(ctx)
		if err != nil {
			p.pinErr = fmt.Errorf("cannot list the server's tools: %v", err)
			p.logf("%v: every call will be denied", p.pinErr)
			return
		}
		tools := make([]chain.Tool, 0, len(defs))
		for _, d := range defs {
			tools = append(tools, chain.Tool(d))
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		body := &chain.SessionBody{Server: p.opt.Server, Principal: chain.Principal(p.opt.Principal),
			PolicyVersion: p.opt.Policy.Version(), Policy: string(p.opt.Policy.Canonical()), Tools: tools, Engine: engine.Version}
		if _, err := p.opt.Log.Append(p.opt.Now(), p.opt.Session, chain.KindSession, body); err != nil {
			p.pinErr = fmt.Errorf("cannot write the audit log: %v", err)
			p.logf("%v: every call will be denied", p.pinErr)
			return
		}
		p.state = engine.NewState(p.opt.Session, p.opt.Server, p.opt.Principal, defs)
	})
}

// relist re-pins after list_changed: new tools become callable, changed
// ones stay denied.
func (p *Proxy) relist(ctx context.Context) {
	if !p.started(ctx) {
		return
	}
	defs, err := p.listTools(ctx)
	if err != nil {
		p.logf("cannot re-list the server's tools after list_changed: %v", err)
		return
	}
	tools := make([]chain.Tool, 0, len(defs))
	for _, d := range defs {
		tools = append(tools, chain.Tool(d))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.opt.Log.Append(p.opt.Now(), p.opt.Session, chain.KindTools, &chain.ToolsBody{Tools: tools, Repin: true}); err != nil {
		p.logf("cannot write the audit log: %v", err)
		return
	}
	p.state.Repin(defs)
}

// started waits for the session to be pinned; false if it never will be.
func (p *Proxy) started(ctx context.Context) bool {
	select {
	case <-p.pinned:
		return p.pinErr == nil
	case <-ctx.Done():
		return false
	case <-time.After(time.Minute):
		return false
	}
}

// filterList drops the tools the policy denies outright from a tools/list
// answer to the client. Anything unexpected passes unchanged: hiding is a
// courtesy, and every call is decided anyway.
func (p *Proxy) filterList(ctx context.Context, r *jsonrpc.Response) *jsonrpc.Response {
	if r.Error != nil || len(r.Result) == 0 {
		return r
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return r
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(res["tools"], &tools); err != nil {
		return r
	}
	kept := make([]json.RawMessage, 0, len(tools))
	for _, t := range tools {
		var name struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t, &name) == nil && p.opt.Policy.Hidden(p.opt.Server, name.Name, p.opt.Principal) {
			continue
		}
		kept = append(kept, t)
	}
	if len(kept) == len(tools) {
		return r
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return r
	}
	res["tools"] = b
	out, err := json.Marshal(res)
	if err != nil {
		return r
	}
	return &jsonrpc.Response{ID: r.ID, Result: out}
}

// end writes the session's end record.
func (p *Proxy) end() {
	select {
	case <-p.pinned:
	default:
		return // never started: nothing to end
	}
	if p.pinErr != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.opt.Log.Append(p.opt.Now(), p.opt.Session, chain.KindEnd, &chain.EndBody{}); err != nil {
		p.logf("cannot write the audit log: %v", err)
	}
}

// malformed answers a request that cannot be read with a JSON-RPC error
// (when it has an id to answer) and records only its size and digest.
func (p *Proxy) malformed(id jsonrpc.ID, raw []byte, reason string, code int64) {
	p.mu.Lock()
	body := &chain.MalformedBody{Size: len(raw), Digest: chain.Digest(raw), Reason: reason}
	if id.IsValid() {
		body.Call = fmt.Sprint(id.Raw())
	}
	if _, err := p.opt.Log.Append(p.opt.Now(), p.opt.Session, chain.KindMalformed, body); err != nil {
		p.logf("cannot write the audit log: %v", err)
	}
	p.mu.Unlock()
	if code == 0 {
		return
	}
	if !id.IsValid() {
		// JSON-RPC answers what it cannot identify with "id": null.
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": reason}})
		if err := p.down.sendRaw(b); err != nil {
			p.logf("cannot write to the client: %v", err)
		}
		return
	}
	p.toClient(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: reason}})
}

// refusal is the tool result of a call bailiff did not forward.
func refusal(id jsonrpc.ID, text string) *jsonrpc.Response {
	res, _ := json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": text}},
		"isError": true,
	})
	return &jsonrpc.Response{ID: id, Result: res}
}

func describe(d engine.Decision) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "bailiff denied this call (check %s", d.Check)
	if d.Rule != "" {
		fmt.Fprintf(&b, ", rule %s", d.Rule)
	}
	fmt.Fprintf(&b, "): %s", d.Reason)
	return b.String()
}
