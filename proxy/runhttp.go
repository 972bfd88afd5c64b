package proxy

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/engine"
)

// `bailiff run --listen` serves one server on Streamable HTTP under its
// own names. The gateway's listener cannot: its SDK server re-encodes
// every answer through the SDK's types and serves tools alone. Here each
// client session is the SDK's server transport on its own, with no SDK
// server behind it: what the client posts reaches the pump as the
// transport decoded it, and what the pump sends goes out as it is, so
// the client and the server negotiate with each other as over stdio
// (docs/decisions.md). The limits around it are the gateway's: Origin
// and Host, the body limit, the session cap and rate, the timeouts.

// handshakeVersions are the revisions `run --listen` serves: those of the
// initialize handshake, whose sessions the transport keeps.
var handshakeVersions = slices.DeleteFunc(slices.Clone(gatewayVersions), func(v string) bool { return v >= revStateless })

// ServeRunHTTP serves up on Streamable HTTP at ln until ctx ends, each
// client session a bailiff session of its own with its own instance of
// the server. The caller chooses ln; it binds to loopback unless told
// otherwise.
func ServeRunHTTP(ctx context.Context, opt Options, ln net.Listener, up Upstream, hopt HTTPOptions) error {
	// A stateless request (2026-07-28) has no session to relay on: as
	// for gateway --listen, the SDK's stateless handler serves it, and
	// the principal's requests share one session whose pump is a
	// gateway's in front of this one server, unprefixed, which
	// initializes the server itself (docs/decisions.md).
	stateless := opt
	stateless.Server, stateless.Unprefixed = "gateway", true
	if up.Name == stateless.Server {
		stateless.Server = "gateway-stateless"
	}
	return serveListening(ctx, opt, stateless, ln, []Upstream{up}, hopt, func(ctx context.Context, o Options, down stream) error {
		return serveOne(ctx, newProxyOn(o, down), freshUpstreams([]Upstream{up})[0])
	})
}

// relaySessions are the handshake sessions of `run --listen` and
// `gateway --listen`, by their Mcp-Session-Id: each a bailiff session
// with its own instances of the servers, which start runs.
type relaySessions struct {
	ctx   context.Context
	opt   Options
	start func(ctx context.Context, o Options, down stream) error
	hopt  HTTPOptions
	// principals, for a gateway, counts the principals served with its
	// stateless sessions; with identity, each session acts for the
	// principal whose token opened it, and no other token's request is
	// served in it.
	principals *pumps
	logf       func(string, ...any)
	adm        *admission
	events     mcp.EventStore

	live atomic.Int64 // sessions in by, read without mu (pumps)

	mu     sync.Mutex
	by     map[string]*relaySession
	opened *atomic.Int64 // sessions opened so far, for session ids
	closed bool
	wg     sync.WaitGroup
}

type relaySession struct {
	t      *mcp.StreamableServerTransport
	conn   mcp.Connection
	cancel context.CancelFunc
	done   chan struct{} // closed once its pump and server have stopped
	err    error         // why it ended, once done
	user   string        // with identity, the principal that opened it
	ending bool          // ended by its client or its idle timeout, under relaySessions.mu

	mu     sync.Mutex
	active int         // POSTs being served: the session is not idle
	idle   *time.Timer // ends the session when unused for the timeout
}

func newRelaySessions(ctx context.Context, opt Options, hopt HTTPOptions, logf func(string, ...any), start func(context.Context, Options, stream) error) *relaySessions {
	rs := &relaySessions{ctx: ctx, opt: opt, start: start, hopt: hopt, logf: logf,
		events: mcp.NewMemoryEventStore(nil), by: map[string]*relaySession{}, opened: new(atomic.Int64)}
	// Every session runs its own server: the cap on sessions is the cap
	// on servers too.
	rs.adm = &admission{max: min(hopt.MaxSessions, hopt.MaxServerSessions), open: rs.ids, logf: logf,
		addrs: newAddrLimiter(hopt.initLimit(), hopt.InitBurst), principals: newAddrLimiter(hopt.initLimit(), hopt.InitBurst),
		perPrincipal: hopt.MaxSessionsPerPrincipal, owner: map[string]string{}, pendingBy: map[string]int{}}
	return rs
}

func (rs *relaySessions) ids() iter.Seq[string] {
	rs.mu.Lock()
	ids := make([]string, 0, len(rs.by))
	for id := range rs.by {
		// An ended session counts until its servers have stopped:
		// opening and ending sessions must not run more at once.
		ids = append(ids, id)
	}
	rs.mu.Unlock()
	return slices.Values(ids)
}

// ServeHTTP serves a request of the handshake revisions; gatewayHandler,
// in front of it, has checked where it comes from and sent the
// stateless revision elsewhere.
func (rs *relaySessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, rs.hopt.MaxRequestBytes)
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains(handshakeVersions, v) {
		http.Error(w, "Bad Request: Unsupported protocol version (supported versions: "+strings.Join(handshakeVersions, ",")+")", http.StatusBadRequest)
		return
	}
	if why, status := mediaTypes(r); why != "" {
		http.Error(w, why, status)
		return
	}
	id := r.Header.Get("Mcp-Session-Id")
	switch {
	case r.Method == http.MethodPost && id == "":
		rs.adm.admit(http.HandlerFunc(rs.open)).ServeHTTP(w, r)
	case r.Method == http.MethodPost || r.Method == http.MethodGet || r.Method == http.MethodDelete:
		if id == "" {
			http.Error(w, "Bad Request: "+r.Method+" requires an Mcp-Session-Id header", http.StatusBadRequest)
			return
		}
		rs.serve(w, r, id)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// serve hands a request of an open session to its transport.
func (rs *relaySessions) serve(w http.ResponseWriter, r *http.Request, id string) {
	rs.mu.Lock()
	s := rs.by[id]
	if s != nil && s.ending {
		s = nil // ended by DELETE or its idle timeout
	}
	rs.mu.Unlock()
	if s == nil {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	if ti := auth.TokenInfoFromContext(r.Context()); s.user != "" && (ti == nil || ti.UserID != s.user) {
		// Another principal's token: the session is not theirs.
		http.Error(w, "session user mismatch", http.StatusForbidden)
		return
	}
	select {
	case <-s.done:
		// Its server has stopped. A 404 would have the client open a
		// new session, clean of all its taint, behind its back: it is
		// told instead, until it ends the session or it goes idle.
		if r.Method == http.MethodDelete {
			rs.end(id, s)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		refuseWith(w, r, http.StatusGone, "this session has ended: "+s.err.Error())
		return
	default:
	}
	switch r.Method {
	case http.MethodDelete:
		rs.end(id, s)
		w.WriteHeader(http.StatusNoContent)
	case http.MethodGet:
		s.t.ServeHTTP(w, r)
	default:
		if !batchAllowed(w, r) {
			return
		}
		s.busy()
		defer s.rest(rs.hopt.SessionTimeout)
		s.t.ServeHTTP(w, r)
	}
}

// open starts a session, with its server, for a POST that names none.
func (rs *relaySessions) open(w http.ResponseWriter, r *http.Request) {
	if !batchAllowed(w, r) {
		return
	}
	o := rs.opt
	var user string
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && rs.principals != nil {
		p, ok := ti.Extra[principalExtra].(engine.Principal)
		if !ok {
			refuseWith(w, r, http.StatusInternalServerError, "bailiff: a request with no verified principal")
			return
		}
		if err := rs.principals.hold(p); err != nil {
			refuse(w, r, "bailiff: "+err.Error(), maxRetryAfter)
			return
		}
		o.Principal, user = p, ti.UserID
	}
	rs.mu.Lock()
	if rs.closed {
		rs.mu.Unlock()
		rs.letGo(user, o.Principal)
		http.Error(w, "Service Unavailable: bailiff is shutting down", http.StatusServiceUnavailable)
		return
	}
	o.Session = fmt.Sprintf("%s-%d", rs.opt.Session, rs.opened.Add(1))
	id := rand.Text()
	ctx, cancel := context.WithCancel(rs.ctx)
	t := &mcp.StreamableServerTransport{SessionID: id, EventStore: rs.events}
	conn, err := t.Connect(ctx)
	if err != nil {
		rs.mu.Unlock()
		cancel()
		rs.letGo(user, o.Principal)
		http.Error(w, "Internal Server Error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	s := &relaySession{t: t, conn: conn, cancel: cancel, done: make(chan struct{}), user: user}
	s.idle = time.AfterFunc(rs.hopt.SessionTimeout, func() { rs.end(id, s) })
	s.idle.Stop()
	rs.wg.Add(1)
	rs.mu.Unlock()
	// Listed open and no longer pending in one step, before its servers
	// start: no count sees it twice, or not at all.
	admitted(r, id, func() {
		rs.mu.Lock()
		rs.by[id] = s
		rs.live.Add(1)
		rs.mu.Unlock()
	})
	if user != "" {
		rs.logf("session %s acts for %q (token from %s; scopes %q)", o.Session, o.Principal.Subject, o.Principal.Issuer, o.Principal.Scopes)
	} else {
		rs.logf("session %s is a client's (its MCP session %s)", o.Session, id)
	}
	go func() {
		defer rs.wg.Done()
		down := newRelayStream(ctx, conn)
		s.err = rs.start(ctx, o, down)
		if s.err == nil {
			s.err = errors.New("its servers have stopped")
		}
		// What the client still waits for (its initialize, when the
		// server never started) is answered, never left hanging.
		down.failOpen(s.err)
		_ = conn.Close()
		rs.letGo(user, o.Principal)
		close(s.done)
	}()
	s.busy()
	defer s.rest(rs.hopt.SessionTimeout)
	t.ServeHTTP(w, r)
}

// letGo frees the principal's place a session held.
func (rs *relaySessions) letGo(user string, p engine.Principal) {
	if user != "" {
		rs.principals.letGo(p)
	}
}

// end closes session id: its client is gone, and its server stops.
func (rs *relaySessions) end(id string, s *relaySession) {
	rs.mu.Lock()
	s.ending = true
	rs.mu.Unlock()
	_ = s.conn.Close() // the pump reads the end of its client
	s.mu.Lock()
	s.idle.Stop()
	s.mu.Unlock()
	go func() {
		<-s.done
		s.cancel()
		rs.mu.Lock()
		if rs.by[id] == s {
			delete(rs.by, id)
			rs.live.Add(-1)
		}
		rs.mu.Unlock()
	}()
}

// hangUp ends every session's streams as the listener shuts down: a
// client's GET stream would otherwise hold the shutdown to its end.
func (rs *relaySessions) hangUp() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, s := range rs.by {
		_ = s.conn.Close()
	}
}

// close ends every session and waits for their servers to stop.
func (rs *relaySessions) close() {
	rs.mu.Lock()
	rs.closed = true
	open := maps.Clone(rs.by)
	rs.mu.Unlock()
	for id, s := range open {
		rs.end(id, s)
	}
	rs.wg.Wait()
}

// busy and rest bracket a POST: a session is idle only with none in
// flight, and its timeout counts from the last one's end.
func (s *relaySession) busy() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active++
	s.idle.Stop()
}

func (s *relaySession) rest(timeout time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active--; s.active == 0 {
		s.idle.Reset(timeout)
	}
}
