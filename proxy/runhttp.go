package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	hopt = hopt.withDefaults()
	if up.Cmd != nil && up.Cmd.Err != nil {
		// Each session starts the server anew: one that cannot be
		// found is refused now, not at every session.
		return fmt.Errorf("start %s: %w", up.Name, up.Cmd.Err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := newProxyOn(opt, newMuxStream()) // for the defaults
	rs := newRelaySessions(ctx, p.opt, up, hopt, p.logf)
	defer rs.close()
	return serveHTTP(ctx, ln, rs, p.opt, rs.hangUp)
}

// relaySessions are the client sessions of `run --listen`, by their
// Mcp-Session-Id: each a bailiff session with its own server instance.
type relaySessions struct {
	ctx    context.Context
	opt    Options
	up     Upstream
	hopt   HTTPOptions
	logf   func(string, ...any)
	adm    *admission
	events mcp.EventStore

	mu     sync.Mutex
	by     map[string]*relaySession
	opened int
	closed bool
	wg     sync.WaitGroup
}

type relaySession struct {
	t      *mcp.StreamableServerTransport
	conn   mcp.Connection
	cancel context.CancelFunc
	done   chan struct{} // closed once its pump and server have stopped
	err    error         // why it ended, once done

	mu     sync.Mutex
	active int         // POSTs being served: the session is not idle
	idle   *time.Timer // ends the session when unused for the timeout
}

func newRelaySessions(ctx context.Context, opt Options, up Upstream, hopt HTTPOptions, logf func(string, ...any)) *relaySessions {
	rs := &relaySessions{ctx: ctx, opt: opt, up: up, hopt: hopt, logf: logf,
		events: mcp.NewMemoryEventStore(nil), by: map[string]*relaySession{}}
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
		ids = append(ids, id)
	}
	rs.mu.Unlock()
	return slices.Values(ids)
}

func (rs *relaySessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if why := offMachine(r); why != "" {
		http.Error(w, "Forbidden: "+why, http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, rs.hopt.MaxRequestBytes)
	v := r.Header.Get("Mcp-Protocol-Version")
	if v >= revStateless {
		refuseStateless(w, r, v)
		return
	}
	if v != "" && !slices.Contains(handshakeVersions, v) {
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
	rs.mu.Unlock()
	if s == nil {
		http.Error(w, "session not found", http.StatusNotFound)
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
	rs.mu.Lock()
	if rs.closed {
		rs.mu.Unlock()
		http.Error(w, "Service Unavailable: bailiff is shutting down", http.StatusServiceUnavailable)
		return
	}
	rs.opened++
	o := rs.opt
	o.Session = fmt.Sprintf("%s-%d", rs.opt.Session, rs.opened)
	id := rand.Text()
	ctx, cancel := context.WithCancel(rs.ctx)
	t := &mcp.StreamableServerTransport{SessionID: id, EventStore: rs.events}
	conn, err := t.Connect(ctx)
	if err != nil {
		rs.mu.Unlock()
		cancel()
		http.Error(w, "Internal Server Error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	s := &relaySession{t: t, conn: conn, cancel: cancel, done: make(chan struct{})}
	s.idle = time.AfterFunc(rs.hopt.SessionTimeout, func() { rs.end(id, s) })
	s.idle.Stop()
	rs.by[id] = s
	rs.wg.Add(1)
	rs.mu.Unlock()
	rs.logf("session %s is a client's (its MCP session %s)", o.Session, id)
	go func() {
		defer rs.wg.Done()
		s.err = serveOne(ctx, newProxyOn(o, newRelayStream(ctx, conn)), freshUpstreams([]Upstream{rs.up})[0])
		if s.err == nil {
			s.err = errors.New("its server has stopped")
		}
		_ = conn.Close()
		close(s.done)
	}()
	s.busy()
	defer s.rest(rs.hopt.SessionTimeout)
	t.ServeHTTP(w, r)
}

// end closes session id: its client is gone, and its server stops.
func (rs *relaySessions) end(id string, s *relaySession) {
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
	for id, s := range rs.by {
		rs.end(id, s)
	}
	rs.mu.Unlock()
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

// offMachine says why a request may not be served from where it comes:
// a page not served from this machine (its Origin), or, on a loopback
// listener, a Host that is not loopback (DNS rebinding). Empty: served.
func offMachine(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) {
		return "Origin " + strconv.Quote(o) + " is not on this machine"
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil {
		if loopbackHostPort(la.String()) && !loopbackHostPort(r.Host) {
			return "invalid Host header " + strconv.Quote(r.Host)
		}
	}
	return ""
}

// mediaTypes checks a request's Content-Type and Accept as the SDK's
// handler does: a POST is JSON and accepts both JSON and an event
// stream, a GET accepts an event stream.
func mediaTypes(r *http.Request) (string, int) {
	var jsonOK, streamOK bool
	for _, value := range r.Header.Values("Accept") {
		for _, raw := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(raw, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	switch r.Method {
	case http.MethodPost:
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			return "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType
		}
		if !jsonOK || !streamOK {
			return "Accept must contain both 'application/json' and 'text/event-stream'", http.StatusBadRequest
		}
	case http.MethodGet:
		if !streamOK {
			return "Accept must contain 'text/event-stream' for GET requests", http.StatusBadRequest
		}
	}
	return "", 0
}

// loopbackHostPort reports whether host[:port] names this machine.
func loopbackHostPort(hp string) bool {
	host, _, err := net.SplitHostPort(hp)
	if err != nil {
		host = strings.Trim(hp, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// batchAllowed refuses a JSON-RPC batch from a client of 2025-06-18 or
// later, which removed them, as the SDK's own handler does; the body is
// put back for the transport.
func batchAllowed(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return false
		}
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= "2025-06-18" && bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("[")) {
		http.Error(w, "Bad Request: JSON-RPC batching is not supported in 2025-06-18 and later", http.StatusBadRequest)
		return false
	}
	return true
}

// refuseStateless answers a request of the stateless revision as a
// stateful SDK server does: with the revisions served, so that a client
// that began with server/discover falls back to initialize.
func refuseStateless(w http.ResponseWriter, r *http.Request, v string) {
	data, _ := json.Marshal(map[string]any{"supported": handshakeVersions, "requested": v})
	jerr := &jsonrpc.Error{Code: codeUnsupportedVersion, Data: data,
		Message: fmt.Sprintf("protocol version %q is not served by bailiff run --listen (it serves the initialize handshake: %s)", v, strings.Join(handshakeVersions, ", "))}
	writeError(w, r, http.StatusBadRequest, jerr)
}

// refuseWith answers a request with a JSON-RPC error under its id, when
// its body holds one request, else the reason in plain text.
func refuseWith(w http.ResponseWriter, r *http.Request, status int, why string) {
	writeError(w, r, status, &jsonrpc.Error{Code: codeOverloaded, Message: why})
}

func writeError(w http.ResponseWriter, r *http.Request, status int, jerr *jsonrpc.Error) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if m, err := jsonrpc.DecodeMessage(body); err == nil {
		if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
			if b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: jerr}); err == nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = w.Write(b)
				return
			}
		}
	}
	http.Error(w, http.StatusText(status)+": "+jerr.Message, status)
}
