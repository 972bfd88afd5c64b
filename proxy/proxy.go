// Package proxy is bailiff's live gateway: it sits between an MCP client
// and a real MCP server on the stdio transport, decides every tools/call
// with the engine before the server is contacted, and writes every
// decision and result to the audit log (through package audit) in the format
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
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"bailiff/audit"
	"bailiff/engine"
)

// Options configure a proxy session.
type Options struct {
	Policy       *engine.Policy
	Log          audit.Log
	Evidence     audit.EvidenceStore
	EvidenceSync bool
	Server       string // the upstream's name, as rules select it
	// Unprefixed makes a gateway of one server serve that server's tool,
	// prompt and resource names as they are, without "<server>.".
	Unprefixed bool
	Session    string
	Principal  engine.Principal
	// Secret keys the digest of calls whose arguments the policy redacts.
	Secret    []byte
	Approvals *Approvals // where out-of-band asks wait (the state database); nil: none
	// Ledger is where tenant spending and rate slots are counted, shared
	// by every session of the process; nil: each session counts its own.
	Ledger *audit.Ledger
	// ApproverKeys: public keys (note form) whose signed answers count.
	ApproverKeys []string
	// Replica names this gateway process in its session records, when
	// replicas share the state database ("" for none).
	Replica string
	Stderr  io.Writer
	Now     func() time.Time
	// CallTimeout bounds how long the upstream may take to answer a call;
	// AskTimeout how long a human may take to answer an elicitation.
	CallTimeout time.Duration
	AskTimeout  time.Duration
	// Protected are the locations no client root may reach (the audit
	// log, its evidence and approvals, the approver keys): bailiff run
	// takes a root that holds or lies in one out of the client's answer
	// to the server's roots/list (roots.go).
	Protected []string
	// Telemetry is told each decision and round trip, for metrics; nil
	// tells nobody.
	Telemetry Telemetry
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
	drv       *audit.Driver  // drives sess, one step at a time under mu
	obs       sessionObserver
	calls     int
	ownDown   map[string]chan *jsonrpc.Response // our requests to the client
	canElicit bool
	waiting   map[string]*engine.Call   // approval id -> the call it would approve
	repins    map[string]engine.ToolDef // approval id -> a changed definition to accept
	askedAt   map[string]time.Time      // approval id -> when it was asked (see approvals.go)
	refused   map[string]string         // a call's answerKey -> why its last answer was refused
	oob       oobGrants                 // grants out of band in the state database (carry.go)
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
	caps     map[string]json.RawMessage        // what it said it serves (gateway)
	dropped  bool                              // left out of the session: it could not be pinned
	// meta is the _meta of a gateway's own stateless session with it
	// (nil: a session of the old handshake).
	meta map[string]any
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

// end writes the session's end record, and its budgets to the state.
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
	if err := p.step(audit.Event{End: &audit.EndBody{}}); err != nil {
		p.logf("cannot write the audit log: %v", err)
	}
	p.saveBudgets()
}

// malformed answers a request that cannot be read with a JSON-RPC error
// (when it has an id to answer) and records only its size and digest.
func (p *Proxy) malformed(id jsonrpc.ID, raw []byte, reason string, code int64) {
	p.mu.Lock()
	body := audit.NewMalformed("", raw, reason)
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
