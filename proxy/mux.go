package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// muxStream is the pump's client when the clients are HTTP requests:
// each forwarded request gets an id of its own (two clients' ids would
// collide in the pump), and the pump's answer goes back to the request
// that waits for it.
type muxStream struct {
	in   chan []byte
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	next    int
	waiting map[string]chan *jsonrpc.Response
	// asking are the forwarded requests whose client can put an ask to a
	// human, by the id the pump knows them by.
	asking map[string]bool
	// traces are the W3C trace context headers of the HTTP requests that
	// carried calls, by forwarded id.
	traces map[string][2]string
}

func newMuxStream() *muxStream {
	return &muxStream{in: make(chan []byte, 64), done: make(chan struct{}),
		waiting: map[string]chan *jsonrpc.Response{}, asking: map[string]bool{}, traces: map[string][2]string{}}
}

// canAsk reports whether the client of the pump's request id declared
// elicitation (askable).
func (m *muxStream) canAsk(id jsonrpc.ID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.asking[key(id)]
}

func (m *muxStream) traceHeaders(id jsonrpc.ID) (string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tc := m.traces[key(id)]
	return tc[0], tc[1]
}

func (m *muxStream) close() { m.once.Do(func() { close(m.done) }) }

func (m *muxStream) read() ([]byte, error) {
	select {
	case b := <-m.in:
		return b, nil
	case <-m.done:
		return nil, io.EOF
	}
}

func (m *muxStream) sendRaw(b []byte) error {
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return err
	}
	return m.send(msg)
}

func (m *muxStream) send(msg jsonrpc.Message) error {
	switch r := msg.(type) {
	case *jsonrpc.Response:
		m.mu.Lock()
		ch, ok := m.waiting[key(r.ID)]
		delete(m.waiting, key(r.ID))
		m.mu.Unlock()
		if ok {
			ch <- r
		}
	case *jsonrpc.Request:
		// A request of the pump's own to the client (it sends none: an
		// HTTP client is asked in the call's result, and asked by the
		// middleware on its own session) is refused at once, so nothing
		// waits on an answer that cannot come.
		if r.ID.IsValid() {
			b, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: r.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "an HTTP client of the gateway is not asked " + r.Method}})
			select {
			case m.in <- b:
			case <-m.done:
			}
		}
		// Notifications (list_changed, servers' log messages) have no
		// stream to go on: see docs/proxy.md.
	}
	return nil
}

// forward hands one client request to the pump and returns its answer
// as the SDK server's result for that method.
func (m *muxStream) forward(ctx context.Context, method string, params mcp.Params, canAsk bool) (mcp.Result, error) {
	raw, err := forwardParams(params)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	ch := make(chan *jsonrpc.Response, 1)
	m.mu.Lock()
	m.next++
	id, _ := jsonrpc.MakeID("http-" + strconv.Itoa(m.next))
	m.waiting[key(id)] = ch
	if canAsk {
		m.asking[key(id)] = true
	}
	if tc, ok := ctx.Value(headerTrace{}).([2]string); ok {
		m.traces[key(id)] = tc
	}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.waiting, key(id))
		delete(m.asking, key(id))
		delete(m.traces, key(id))
		m.mu.Unlock()
	}()
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: method, Params: raw})
	if err != nil {
		return nil, err
	}
	select {
	case m.in <- b:
	case <-m.done:
		return nil, errors.New("the gateway is closing")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var r *jsonrpc.Response
	select {
	case r = <-ch:
	case <-m.done:
		return nil, errors.New("the gateway is closing")
	case <-ctx.Done():
		// The pump still finishes the call and records it.
		return nil, ctx.Err()
	}
	if r.Error != nil {
		return nil, r.Error
	}
	var res mcp.Result = &mcp.CallToolResult{}
	if newResult := statelessResults[method]; newResult != nil {
		res = newResult()
	}
	if err := json.Unmarshal(r.Result, res); err != nil {
		// What cannot be read as a result is not passed on in part.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s result cannot be read: %v", method, err)}
	}
	return res, nil
}

// forwardParams are a request's params as the pump takes them: without
// the _meta keys of the client's session with the SDK server, which
// has already checked them (the pump's session is one for every client,
// of no one client's revision).
func forwardParams(params mcp.Params) (json.RawMessage, error) {
	if params == nil {
		return json.RawMessage("{}"), nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	if rawMeta, ok := obj["_meta"]; ok {
		var meta map[string]json.RawMessage
		if json.Unmarshal(rawMeta, &meta) == nil {
			for _, k := range sessionMetaKeys {
				delete(meta, k)
			}
			if len(meta) == 0 {
				delete(obj, "_meta")
			} else {
				obj["_meta"], _ = json.Marshal(meta)
			}
		}
	}
	return json.Marshal(obj)
}

// call forwards a tools/call of a stateless request. Such a client is
// asked in the call's own result (input_required), which it answers by
// retrying: the pump does it all. A handshake session is a relay
// session, never served here.
func (m *muxStream) call(ctx context.Context, req mcp.Request) (mcp.Result, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	multi, canAsk := clientAsks(ss, req.GetParams())
	if x := req.GetExtra(); x != nil && x.Header != nil && x.Header.Get("traceparent") != "" {
		ctx = context.WithValue(ctx, headerTrace{}, [2]string{x.Header.Get("traceparent"), x.Header.Get("tracestate")})
	}
	res, err := m.forward(ctx, "tools/call", req.GetParams(), canAsk)
	if err != nil || multi {
		return res, err
	}
	if r, ok := res.(*mcp.CallToolResult); ok && r.InputRequests != nil {
		// Only a client of the multi-round trip is asked in a result:
		// anything else is a bug, not relayed.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "bailiff: an ask this client cannot be given"}
	}
	return res, nil
}

// headerTrace carries a call's HTTP trace context headers to forward.
type headerTrace struct{}

// clientAsks reports whether the client of one request speaks the
// multi-round trip (2026-07-28 or later), and whether it declared
// elicitation: in the request's own _meta at 2026-07-28, which says it
// anew on every request, else in its session's initialize.
func clientAsks(ss *mcp.ServerSession, params mcp.Params) (multi, canAsk bool) {
	if ss == nil {
		return false, false
	}
	init := ss.InitializeParams()
	if init == nil {
		return false, false
	}
	if init.ProtocolVersion >= revStateless {
		raw, ok := params.(*mcp.CallToolParamsRaw)
		if !ok || raw == nil {
			return true, false
		}
		caps, _ := raw.Meta[metaClientCapabilities].(map[string]any)
		_, canAsk = caps["elicitation"]
		return true, canAsk
	}
	return false, false // not a client of the stateless revision: not asked here
}
