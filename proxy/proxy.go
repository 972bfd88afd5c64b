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
//   - tools/list answers lose the tools the policy denies outright, and
//     every tool whose definition is not the one pinned (pins.go).
//   - on the first of the client's initialized notification, the
//     server's result for its server/discover, its first tools/list or
//     its first tools/call, the proxy lists the server's tools itself and
//     pins them (the session record), and re-lists on list_changed.
//     Under revision 2026-07-28 every client request must carry the
//     revision's _meta, and a result that is not complete is no tool
//     result (revision.go).
//   - an ask goes to the human through elicitation when the client
//     supports it (elicitation/create, or under 2026-07-28 an
//     input_required result the client retries: mrtr.go), and otherwise
//     is refused with the id of a pending approval that `bailiff
//     approve` can grant for a retry.
//   - nothing else is changed, but every text the server sends the
//     client (resources, prompts, errors, log messages, sampling and
//     elicitation requests) is recorded and taints before it is relayed
//     (channels.go).
//
// Start with Run.
package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
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

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
)

// Options configure a proxy session.
type Options struct {
	Policy       *engine.Policy
	Log          *chain.Writer
	Evidence     chain.EvidenceStore
	EvidenceSync bool
	Server       string // the upstream's name, as rules select it
	Session      string
	Principal    engine.Principal
	// Secret keys the digest of calls whose arguments the policy redacts.
	Secret    []byte
	Approvals *Approvals // where out-of-band asks wait; nil: none
	// ApproverKeys are the approver public keys (note verifier form) whose
	// signed answers the proxy takes; none: no out-of-band answer counts.
	ApproverKeys []string
	Stderr       io.Writer
	Now          func() time.Time
	// CallTimeout bounds how long the upstream may take to answer a call;
	// AskTimeout how long a human may take to answer an elicitation.
	CallTimeout time.Duration
	AskTimeout  time.Duration
	// Protected are the locations no client root may reach (the audit
	// log, its evidence and approvals, the approver keys): bailiff run
	// takes a root that holds or lies in one out of the client's answer
	// to the server's roots/list (roots.go).
	Protected []string
}

// Proxy is one session between one client and its upstream servers: one
// for bailiff run (a transparent pump), several for bailiff gateway.
type Proxy struct {
	opt  Options
	down stream // the client

	// gateway is set when the proxy fronts several servers as one: it
	// answers initialize and tools/list itself, names tools
	// "<server>.<tool>", and routes calls on the first dot.
	gateway bool
	ups     []*upstream
	byName  map[string]*upstream

	// resolveLinks is set when the servers run on this machine: confined
	// path arguments are resolved before deciding (paths.go).
	resolveLinks bool

	pinned   chan struct{}
	pinOnce  sync.Once
	pinStart sync.Once
	pinErr   error
	work     sync.WaitGroup // every goroutine the session started
	inCalls  sync.WaitGroup // the client's calls being handled

	mu        sync.Mutex     // guards everything below, and each upstream's maps
	sess      *audit.Session // nil until the session record is written
	calls     int
	ownDown   map[string]chan *jsonrpc.Response // our requests to the client
	canElicit bool
	waiting   map[string]*engine.Call   // approval id -> the call it would approve
	repins    map[string]engine.ToolDef // approval id -> a changed definition to accept
	askedAt   map[string]time.Time      // approval id -> when it was asked (see approvals.go)
	refused   map[string]string         // a call's answerKey -> why its last answer was refused
	defs      []engine.ToolDef          // the session's tools as last listed
	closed    bool
	// clientGone is set once the client's stream has ended.
	clientGone bool
	early      []early // channel output from before the session record
	// rootsReqs are the server's roots/list requests the client has yet
	// to answer; serverDir is the server's directory (roots.go).
	rootsReqs map[string]bool
	serverDir string
	// stateless is set once the client speaks revision 2026-07-28 or
	// later; clientMeta is the revision's _meta of its latest request,
	// which the proxy's own requests upstream carry (revision.go).
	stateless  bool
	clientMeta map[string]any
	// discovering are the client's server/discover requests the server
	// has yet to answer, with the _meta each would make the session's.
	discovering map[string]map[string]any
	// stateSecret keys the requestState of asks put to a stateless
	// client; asks are those waiting for their retry, by nonce, and
	// usedNonces the states already tried (mrtr.go).
	stateSecret []byte
	asks        map[string]pendingAsk
	usedNonces  map[string]int64 // nonce -> its state's expiry
	// shook is set once the client's initialize went through: the
	// session is of the handshake's revision for good.
	shook bool
}

// upstream is one server behind the proxy.
type upstream struct {
	name     string
	wire     stream
	ownUp    map[string]chan *jsonrpc.Response // our requests to it
	inflight map[string]chan *jsonrpc.Response // forwarded tools/call by id
	listReqs map[string]bool                   // the client's tools/list requests
	relayed  map[string]string                 // other relayed client requests: id -> method
	tools    []json.RawMessage                 // its tools as listed (gateway)
	dropped  bool                              // left out of the session: it could not be pinned
	// meta is the _meta of a gateway's own stateless session with it
	// (nil: a session of the old handshake).
	meta map[string]any
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
	p.resolveLinks = true
	p.serverDir = cmd.Dir
	err = p.Serve(ctx)
	upIn.Close()
	stop(cmd)
	return err
}

// RunURL is Run for a server at a Streamable HTTP endpoint: bailiff is
// its client, and pumps between it and the client on in/out.
func RunURL(ctx context.Context, opt Options, in io.Reader, out io.Writer, url string) error {
	s, err := dialHTTP(url, nil)
	if err != nil {
		return err
	}
	defer s.close()
	p := newProxy(opt, in, out)
	p.addUpstreamOn(opt.Server, s)
	// resolveLinks stays unset: the server may run anywhere, and a
	// symlink on this machine says nothing of its paths.
	return p.Serve(ctx)
}

// stop waits for a server whose stdin is closed to exit, and makes it.
func stop(cmd *exec.Cmd) {
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
}

// New makes a proxy between a client (clientIn, clientOut) and a server
// (serverOut is what it writes, serverIn what it reads).
func New(opt Options, clientIn io.Reader, clientOut io.Writer, serverOut io.Reader, serverIn io.Writer) *Proxy {
	p := newProxy(opt, clientIn, clientOut)
	p.addUpstream(opt.Server, serverOut, serverIn)
	return p
}

func newProxy(opt Options, clientIn io.Reader, clientOut io.Writer) *Proxy {
	return newProxyOn(opt, newWire(clientIn, clientOut))
}

// newProxyOn makes a proxy whose client is down.
func newProxyOn(opt Options, down stream) *Proxy {
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
		opt: opt, down: down, byName: map[string]*upstream{},
		pinned: make(chan struct{}), stateSecret: newStateSecret(),
		ownDown: map[string]chan *jsonrpc.Response{}, waiting: map[string]*engine.Call{}, repins: map[string]engine.ToolDef{},
	}
}

func (p *Proxy) addUpstream(name string, serverOut io.Reader, serverIn io.Writer) *upstream {
	return p.addUpstreamOn(name, newWire(serverOut, serverIn))
}

func (p *Proxy) addUpstreamOn(name string, s stream) *upstream {
	u := &upstream{name: name, wire: s, ownUp: map[string]chan *jsonrpc.Response{},
		inflight: map[string]chan *jsonrpc.Response{}, listReqs: map[string]bool{}}
	p.ups = append(p.ups, u)
	p.byName[name] = u
	return u
}

// Serve pumps until the client or the server closes its stream (or ctx
// ends). Calls still waiting then fail, audited, and the session's end
// record is written last.
func (p *Proxy) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	serverDone := make(chan struct{}, len(p.ups))
	for _, u := range p.ups {
		go func() {
			p.fromServer(ctx, u)
			serverDone <- struct{}{}
		}()
	}
	if p.gateway {
		p.startPin(ctx)
	}
	clientDone := make(chan struct{})
	go func() {
		p.fromClient(ctx)
		close(clientDone)
	}()
	select {
	case <-clientDone:
		// The client has said all it will: nobody can answer an
		// elicitation now, but calls already forwarded finish and are
		// recorded (each within CallTimeout), so nothing is lost.
		p.mu.Lock()
		p.clientGone = true
		asks := p.ownDown
		p.ownDown = map[string]chan *jsonrpc.Response{}
		p.mu.Unlock()
		for _, ch := range asks {
			close(ch)
		}
		idle := make(chan struct{})
		go func() {
			p.inCalls.Wait()
			close(idle)
		}()
		select {
		case <-idle:
		case <-serverDone:
		case <-ctx.Done():
		}
	case <-serverDone:
	case <-ctx.Done():
	}
	p.shutdown()
	cancel()
	p.work.Wait()
	p.end()
	return nil
}

// spawn runs fn in a goroutine Serve waits for, unless the session is
// closing (then fn would find nothing to do).
func (p *Proxy) spawn(fn func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.work.Add(1)
	go func() {
		defer p.work.Done()
		p.safely(fn)
	}()
	return true
}

// safely runs fn and reports whether it returned rather than panicked. A
// panic is a bug, but it must not stop the gateway: what it has to refuse
// (a call) its own recovery refuses; what reaches here is logged.
func (p *Proxy) safely(fn func()) (returned bool) {
	defer func() {
		if r := recover(); r != nil {
			p.logf("internal error (message dropped): %v", r)
		}
	}()
	fn()
	return true
}

// pump runs a read loop until it returns on its own (its stream ended, or
// the session closed), restarting it after a panic: the message it was
// handling is dropped, and the next one is read.
func (p *Proxy) pump(ctx context.Context, loop func()) {
	for !p.safely(loop) && ctx.Err() == nil {
	}
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
	p.pump(ctx, func() { p.fromClientLoop(ctx) })
}

func (p *Proxy) fromClientLoop(ctx context.Context) {
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
			if !p.gateway {
				p.toServer(p.ups[0], p.screenRoots(m))
			}
		}
	}
}

func (p *Proxy) clientRequest(ctx context.Context, m *jsonrpc.Request) {
	if !p.checkRevision(m) {
		return
	}
	switch m.Method {
	case "tools/call":
		if !m.ID.IsValid() {
			p.malformed(m.ID, m.Params, "tools/call sent as a notification", 0)
			return
		}
		// A call that comes before any handshake (there is none in the
		// stateless revision) starts the pin and waits only for it.
		p.startPin(ctx)
		p.inCalls.Add(1)
		if !p.spawn(func() { defer p.inCalls.Done(); p.call(ctx, m) }) {
			p.inCalls.Done()
		}
		return
	case "initialize":
		var params struct {
			ProtocolVersion string                     `json:"protocolVersion"`
			Capabilities    map[string]json.RawMessage `json:"capabilities"`
		}
		_, ok := params.Capabilities["elicitation"]
		if json.Unmarshal(m.Params, &params) == nil {
			_, ok = params.Capabilities["elicitation"]
		}
		p.mu.Lock()
		// Only the session's first initialize, a request, says what the
		// client can do: a later one (which the server refuses) or one
		// sent as a notification would let a client that could not be
		// asked claim elicitation and approve its own asks in band.
		if m.ID.IsValid() && !p.shook {
			p.canElicit = ok
			p.shook = true
		}
		p.mu.Unlock()
		if p.gateway {
			p.toClient(p.initializeResult(m.ID, params.ProtocolVersion))
			return
		}
	}
	if p.gateway {
		p.gatewayRequest(ctx, m)
		return
	}
	u := p.ups[0]
	switch m.Method {
	case "tools/list":
		if m.ID.IsValid() {
			p.mu.Lock()
			u.listReqs[key(m.ID)] = true
			p.mu.Unlock()
		}
		p.startPin(ctx)
	case "notifications/initialized":
		// Relayed first, so that the server has what it needs to serve
		// the pin's own tools/list before that is sent. (A discover
		// starts the pin when the server has answered it: discovered.)
		p.toServer(u, m)
		p.startPin(ctx)
		return
	}
	p.relaying(u, m)
	p.toServer(u, m)
}

// startPin starts the pin, once: on the first message that shows the
// session has started or needs the server's tools.
func (p *Proxy) startPin(ctx context.Context) {
	p.pinStart.Do(func() { p.spawn(func() { p.pin(ctx) }) })
}

func (p *Proxy) toServer(u *upstream, m jsonrpc.Message) {
	if err := u.wire.send(m); err != nil {
		p.logf("cannot write to %s: %v", u.name, err)
	}
}

func (p *Proxy) toClient(m jsonrpc.Message) {
	if err := p.down.send(m); err != nil {
		p.logf("cannot write to the client: %v", err)
	}
}

func (p *Proxy) fromServer(ctx context.Context, u *upstream) {
	p.pump(ctx, func() { p.fromServerLoop(ctx, u) })
}

func (p *Proxy) fromServerLoop(ctx context.Context, u *upstream) {
	for ctx.Err() == nil {
		line, err := u.wire.read()
		if errors.Is(err, errTooLong) {
			p.logf("%s sent a message longer than %d bytes; dropped", u.name, maxMessage)
			continue
		}
		if err != nil {
			return
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			// stdout carries MCP messages only: the server's stray output
			// goes to stderr, never to the client.
			p.logf("%s wrote a line that is not a JSON-RPC message (dropped): %.200q", u.name, line)
			continue
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			k := key(m.ID)
			p.mu.Lock()
			own, isOwn := u.ownUp[k]
			delete(u.ownUp, k)
			call, isCall := u.inflight[k]
			delete(u.inflight, k)
			isList := u.listReqs[k]
			delete(u.listReqs, k)
			_, relayed := u.relayed[k]
			p.mu.Unlock()
			if !isOwn && !isCall {
				p.fromServerResponse(u, m, isList)
			}
			switch {
			case isOwn:
				own <- m
			case isCall:
				call <- m
			case isList:
				p.relayList(ctx, m)
			case !p.gateway && relayed:
				p.discovered(ctx, m)
				if k := relayedAsksInput(m.Result); m.Error == nil && k != "" {
					// The client would put the server's own requests
					// (roots, sampling, elicitation) to itself and send
					// the answers back in a retry bailiff does not screen:
					// refused, as a tools/call result asking so is. Its
					// text was recorded above, and taints.
					p.logf("%s asked the client for more input in a result (%s): refused", u.name, k)
					p.toClient(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
						Message: "bailiff: the server asked for more input (" + k + "), which bailiff does not relay"}})
					continue
				}
				p.toClient(m)
			case !p.gateway:
				// An answer to no request the client is waiting on: a
				// second answer, one to a call not yet forwarded, or one
				// under an id of another type ("2" for 2, which some
				// clients match). Relayed, it would skip the pins and the
				// taint; it is dropped.
				p.logf("%s answered no request it was sent (id %v): dropped", u.name, m.ID.Raw())
			}
		case *jsonrpc.Request:
			p.fromServerRequest(u, m)
			if m.Method == "notifications/tools/list_changed" {
				p.spawn(func() { p.relist(ctx, u) })
			}
			if !p.gateway {
				p.noteRootsRequest(m)
				p.toClient(m)
				continue
			}
			switch {
			case m.ID.IsValid():
				// A gateway relays no server-to-client requests (sampling,
				// roots, elicitation): the server gets a plain refusal.
				p.toServer(u, &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
					Message: "bailiff gateway does not relay " + m.Method}})
			case m.Method != "notifications/tools/list_changed":
				p.toClient(m)
			}
		}
	}
}

// shutdown answers every call still waiting on the server: it is gone.
func (p *Proxy) shutdown() {
	p.mu.Lock()
	p.closed = true
	var chans []chan *jsonrpc.Response
	for _, u := range p.ups {
		for _, ch := range u.inflight {
			chans = append(chans, ch)
		}
		for _, ch := range u.ownUp {
			chans = append(chans, ch)
		}
		u.inflight, u.ownUp = map[string]chan *jsonrpc.Response{}, map[string]chan *jsonrpc.Response{}
	}
	for _, ch := range p.ownDown {
		chans = append(chans, ch)
	}
	p.ownDown = map[string]chan *jsonrpc.Response{}
	p.mu.Unlock()
	for _, ch := range chans {
		close(ch)
	}
}

// ownID is the id of a request of the proxy's own: random, so that no
// peer can predict it. A server that knew the id of bailiff's next
// elicitation could send the client a question of its own under that id
// and have the answer to it taken as the human's approval.
func ownID() string {
	var b [16]byte
	rand.Read(b[:])
	return "bailiff-" + hex.EncodeToString(b[:])
}

// request sends a request of the proxy's own to a server (u) or, with u
// nil, to the client, and waits for its answer.
func (p *Proxy) request(ctx context.Context, u *upstream, method string, params any, timeout time.Duration) (*jsonrpc.Response, error) {
	p.mu.Lock()
	if p.closed || (u == nil && p.clientGone) {
		p.mu.Unlock()
		return nil, errors.New("the session is closed")
	}
	id, _ := jsonrpc.MakeID(ownID())
	ch := make(chan *jsonrpc.Response, 1)
	table := p.ownDown
	if u != nil {
		table = u.ownUp
	}
	table[key(id)] = ch
	p.mu.Unlock()
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	req := &jsonrpc.Request{ID: id, Method: method, Params: raw}
	if u != nil {
		err = u.wire.send(req)
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

// listTools asks a server for its whole tool list, page by page, and
// returns the tools as pinned (named "<server>.<tool>" in a gateway) and
// as listed.
func (p *Proxy) listTools(ctx context.Context, u *upstream) ([]engine.ToolDef, []json.RawMessage, error) {
	var defs []engine.ToolDef
	var raws []json.RawMessage
	params := p.withOwnMeta(u, map[string]any{})
	for page := 0; page < 100; page++ {
		r, err := p.request(ctx, u, "tools/list", params, 30*time.Second)
		if err != nil {
			return nil, nil, err
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
			ResultType *string           `json:"resultType"`
		}
		if err := json.Unmarshal(r.Result, &res); err != nil {
			return nil, nil, fmt.Errorf("tools/list result: %v", err)
		}
		if res.ResultType != nil && *res.ResultType != "complete" {
			return nil, nil, fmt.Errorf("tools/list result is not complete (resultType %q)", *res.ResultType)
		}
		for _, t := range res.Tools {
			def, err := engine.ParseTool(t)
			if err != nil {
				// A tool that cannot be pinned cannot be called.
				p.logf("%s listed a tool that cannot be read (never callable): %v", u.name, err)
				continue
			}
			if p.gateway {
				def.Name = u.name + "." + def.Name
			}
			defs = append(defs, def)
			raws = append(raws, t)
		}
		if res.NextCursor == "" {
			return defs, raws, nil
		}
		params = p.withOwnMeta(u, map[string]any{"cursor": res.NextCursor})
	}
	return nil, nil, errors.New("tools/list paginates without end")
}

// pin lists and pins the server's tools and writes the session record.
func (p *Proxy) pin(ctx context.Context) {
	p.pinOnce.Do(func() {
		defer close(p.pinned)
		var defs []engine.ToolDef
		for _, u := range p.ups {
			if p.gateway {
				// One broken (or hostile) server of several loses its own
				// tools, not everyone's: none of its tools is pinned, so
				// every call to it is denied by pinning.
				if err := p.initialize(ctx, u); err != nil {
					p.dropServer(u, fmt.Errorf("cannot initialize %s: %v", u.name, err))
					continue
				}
			}
			d, raws, err := p.listTools(ctx, u)
			if err != nil && p.gateway {
				p.dropServer(u, fmt.Errorf("cannot list the tools of %s: %v", u.name, err))
				continue
			}
			if err != nil {
				p.pinErr = fmt.Errorf("cannot list the tools of %s: %v", u.name, err)
				p.logf("%v: every call will be denied", p.pinErr)
				return
			}
			p.mu.Lock()
			u.tools = raws
			p.mu.Unlock()
			defs = append(defs, d...)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		body := &audit.SessionBody{Server: p.opt.Server, Principal: p.opt.Principal, Tools: defs, Approvers: p.opt.ApproverKeys}
		sess, err := audit.Start(audit.Config{Policy: p.opt.Policy, Log: p.opt.Log}, p.opt.Now(), p.opt.Session, body)
		if err != nil {
			p.pinErr = fmt.Errorf("cannot write the audit log: %v", err)
			p.logf("%v: every call will be denied", p.pinErr)
			return
		}
		p.sess = sess
		p.defs = defs
		p.flushEarly()
	})
}

// dropServer leaves a gateway's server out of the session: it is never
// listed again, and no tool of it is pinned.
func (p *Proxy) dropServer(u *upstream, err error) {
	p.logf("%v: its tools are not served, and every call to it is denied", err)
	p.mu.Lock()
	u.dropped = true
	p.mu.Unlock()
}

// relist re-pins after a server's list_changed: new tools become
// callable, changed ones stay denied.
func (p *Proxy) relist(ctx context.Context, u *upstream) {
	if !p.started(ctx) {
		return
	}
	p.mu.Lock()
	dropped := u.dropped
	p.mu.Unlock()
	if dropped {
		return
	}
	defs, raws, err := p.listTools(ctx, u)
	if err != nil {
		p.logf("cannot re-list the tools of %s after list_changed: %v", u.name, err)
		return
	}
	p.mu.Lock()
	u.tools = raws
	// The record holds the session's whole list: every server's tools.
	var all []engine.ToolDef
	for _, o := range p.ups {
		if o == u {
			all = append(all, defs...)
			continue
		}
		for _, t := range o.tools {
			if def, err := engine.ParseTool(t); err == nil {
				if p.gateway {
					def.Name = o.name + "." + def.Name
				}
				all = append(all, def)
			}
		}
	}
	err = p.sess.Tools(p.opt.Now(), &audit.ToolsBody{Tools: all, Repin: true})
	if err == nil {
		p.defs = all
	}
	p.mu.Unlock()
	if err != nil {
		p.logf("cannot write the audit log: %v", err)
		return
	}
	if p.gateway {
		n, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
		if err := p.down.sendRaw(n); err != nil {
			p.logf("cannot write to the client: %v", err)
		}
	}
}

// started waits for the session to be pinned; false if it never will be.
// It waits on the pin alone, which is bounded by its own requests'
// timeouts: whoever needs the pin has started it (startPin), so there is
// no notification to wait for.
func (p *Proxy) started(ctx context.Context) bool {
	select {
	case <-p.pinned:
		return p.pinErr == nil
	case <-ctx.Done():
		return false
	}
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
	if err := p.sess.End(p.opt.Now(), &audit.EndBody{}); err != nil {
		p.logf("cannot write the audit log: %v", err)
	}
}

// malformed answers a request that cannot be read with a JSON-RPC error
// (when it has an id to answer) and records only its size and digest.
func (p *Proxy) malformed(id jsonrpc.ID, raw []byte, reason string, code int64) {
	p.mu.Lock()
	body := &audit.MalformedBody{Size: len(raw), Digest: chain.Digest(raw), Reason: reason}
	if id.IsValid() {
		body.Call = fmt.Sprint(id.Raw())
	}
	if err := audit.Malformed(p.opt.Log, p.opt.Now(), p.opt.Session, body); err != nil {
		p.logf("cannot write the audit log: %v", err)
	}
	p.mu.Unlock()
	if code == 0 {
		return
	}
	if !id.IsValid() {
		// JSON-RPC would answer with "id": null, but MCP clients (the Go
		// SDK's among them) end the session on a response that answers no
		// request: a line that names no request gets no answer.
		p.logf("ignored a client message that is not a request (%d bytes): %s", len(raw), reason)
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
