package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"bailiff/internal/fault"
)

// relayStream is the pump's client when that client is one session of
// `bailiff run --listen`: the SDK's Streamable HTTP transport carries the
// messages, and they pass as they are, in both directions, as over stdio.
//
// What the transport cannot learn from a message is the client request a
// server's notification or request belongs to. A server on stdio says
// nothing of it, yet over HTTP it decides the stream: a progress
// notification sent on the standalone stream can reach the client after
// the call's answer, when the client no longer listens for it. So a
// message is sent on the stream of the request it names (the progress
// token of notifications/progress) or, when the client has one request
// open, on that request's stream, as the server itself would over HTTP;
// otherwise, or once that stream is closed, on the standalone stream.
type relayStream struct {
	conn mcp.Connection
	ctx  context.Context // the session's: ends when the session does

	mu     sync.Mutex
	open   []jsonrpc.ID          // the client's requests not yet answered, oldest first
	tokens map[string]jsonrpc.ID // progress token -> the request that gave it
	// traces are the W3C trace context headers of the HTTP requests that
	// carried the open calls.
	traces map[string][2]string
}

// maxOpen bounds what a client that never waits can make the stream
// remember: past it, the oldest is forgotten, and its messages go on the
// standalone stream.
const maxOpen = 1024

func newRelayStream(ctx context.Context, conn mcp.Connection) *relayStream {
	return &relayStream{conn: conn, ctx: ctx, tokens: map[string]jsonrpc.ID{}, traces: map[string][2]string{}}
}

func (s *relayStream) read() ([]byte, error) {
	msg, err := s.conn.Read(s.ctx)
	if err != nil {
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		s.opened(req)
	}
	return jsonrpc.EncodeMessage(msg)
}

func (s *relayStream) opened(req *jsonrpc.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.open) >= maxOpen {
		s.forget(s.open[0])
	}
	s.open = append(s.open, req.ID)
	if tok, ok := progressToken(req.Params); ok {
		s.tokens[tok] = req.ID
	}
	if x, ok := req.Extra.(*mcp.RequestExtra); ok && x != nil && x.Header != nil && x.Header.Get("traceparent") != "" {
		s.traces[key(req.ID)] = [2]string{x.Header.Get("traceparent"), x.Header.Get("tracestate")}
	}
}

func (s *relayStream) traceHeaders(id jsonrpc.ID) (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tc := s.traces[key(id)]
	return tc[0], tc[1]
}

// forget drops id from what is open. Called with s.mu held.
func (s *relayStream) forget(id jsonrpc.ID) {
	for i, o := range s.open {
		if o == id {
			s.open = append(s.open[:i], s.open[i+1:]...)
			break
		}
	}
	for tok, o := range s.tokens {
		if o == id {
			delete(s.tokens, tok)
		}
	}
	delete(s.traces, key(id))
}

// failOpen answers every request of the client still open with an error
// saying the session has ended, and why.
func (s *relayStream) failOpen(why error) {
	s.mu.Lock()
	open := slices.Clone(s.open)
	s.mu.Unlock()
	for _, id := range open {
		_ = s.send(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "bailiff: this session has ended: " + why.Error()}})
	}
}

func (s *relayStream) sendRaw(b []byte) error {
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return err
	}
	return s.send(msg)
}

func (s *relayStream) send(m jsonrpc.Message) error {
	if b := fault.Edit(fault.Relay, func() []byte { b, _ := jsonrpc.EncodeMessage(m); return b }); b != nil {
		// A test breaks what is relayed on purpose, to show the
		// conformance run notices.
		if edited, err := jsonrpc.DecodeMessage(b); err == nil {
			m = edited
		}
	}
	switch r := m.(type) {
	case *jsonrpc.Response:
		s.mu.Lock()
		s.forget(r.ID)
		s.mu.Unlock()
		return s.conn.Write(s.ctx, m)
	case *jsonrpc.Request:
		if id, ok := s.related(r); ok {
			if err := s.conn.Write(relatedTo(s.ctx, id), m); err == nil || s.ctx.Err() != nil {
				return err
			}
			// Its request was answered in the meantime: the message
			// still reaches the client, out of band.
		}
	}
	return s.conn.Write(s.ctx, m)
}

// related is the client request a server's message belongs to, if one
// can be told.
func (s *relayStream) related(r *jsonrpc.Request) (jsonrpc.ID, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method == "notifications/progress" {
		if tok, ok := progressToken(r.Params); ok {
			id, ok := s.tokens[tok]
			return id, ok
		}
	}
	if len(s.open) == 1 {
		return s.open[0], true
	}
	return jsonrpc.ID{}, false
}

// progressToken reads the progress token of a request's params
// (_meta.progressToken) or of a progress notification's (progressToken),
// as a key: a string and a number never collide.
func progressToken(params json.RawMessage) (string, bool) {
	var p struct {
		Meta struct {
			Token any `json:"progressToken"`
		} `json:"_meta"`
		Token any `json:"progressToken"`
	}
	if json.Unmarshal(params, &p) != nil {
		return "", false
	}
	tok := p.Token
	if tok == nil {
		tok = p.Meta.Token
	}
	switch t := tok.(type) {
	case string:
		return "s" + t, true
	case float64:
		return "n" + strconv.FormatFloat(t, 'g', -1, 64), true
	}
	return "", false
}

// relatedTo is ctx, marked so that the SDK's transport sends what is
// written with it on the stream of request id. The SDK marks the context
// of the handler of each request it serves that way, and exports neither
// the mark nor a way to set it; so a server of its own, which this
// process alone talks to, is sent a ping under id, and its handler's
// context (without its cancellation) is the mark. Contexts are kept by
// id: an id is only a value, and one minted for it serves every session.
func relatedTo(ctx context.Context, id jsonrpc.ID) context.Context {
	mark, err := marks.get(id)
	if err != nil {
		return ctx
	}
	return mergedValues{Context: ctx, values: mark}
}

// mergedValues is ctx's deadline and cancellation with values looked up
// in values first.
type mergedValues struct {
	context.Context
	values context.Context
}

func (m mergedValues) Value(key any) any {
	if v := m.values.Value(key); v != nil {
		return v
	}
	return m.Context.Value(key)
}

// minter mints the contexts relatedTo needs.
type minter struct {
	once sync.Once
	err  error
	conn mcp.Connection // the minting server's peer
	got  chan context.Context

	mu    sync.Mutex // one ping at a time: ids would collide
	cache map[jsonrpc.ID]context.Context
}

var marks minter

// maxMarks bounds the cache; ids are the clients' to choose.
const maxMarks = 4096

func (m *minter) get(id jsonrpc.ID) (context.Context, error) {
	m.once.Do(m.start)
	if m.err != nil {
		return nil, m.err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.cache[id]; ok {
		return c, nil
	}
	if err := m.conn.Write(context.Background(), &jsonrpc.Request{ID: id, Method: "ping"}); err != nil {
		return nil, err
	}
	c := <-m.got
	if _, err := m.conn.Read(context.Background()); err != nil { // the ping's answer
		return nil, err
	}
	if len(m.cache) >= maxMarks {
		clear(m.cache)
	}
	m.cache[id] = c
	return c, nil
}

func (m *minter) start() {
	m.cache = map[jsonrpc.ID]context.Context{}
	m.got = make(chan context.Context, 1)
	server := mcp.NewServer(&mcp.Implementation{Name: "bailiff-marks", Version: "1"}, nil)
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "ping" {
				m.got <- context.WithoutCancel(ctx)
			}
			return next(ctx, method, req)
		}
	})
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, m.err = server.Connect(ctx, st, nil); m.err != nil {
		return
	}
	m.conn, m.err = ct.Connect(ctx)
	if m.err == nil && m.conn == nil {
		m.err = errors.New("no connection")
	}
}
