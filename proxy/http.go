package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connStream is an upstream reached over Streamable HTTP: bailiff is the
// client, on the SDK's StreamableClientTransport. Its Connection already
// speaks whole JSON-RPC messages, so the pump runs over it unchanged;
// the bytes it reads are the message re-encoded, which the pump decodes
// as it would a line from stdio.
type connStream struct {
	ctx    context.Context
	cancel context.CancelFunc
	conn   mcp.Connection
	in     chan jsonrpc.Message // what the server sent
	local  chan jsonrpc.Message // answers made here, for requests the server never got
	mu     sync.Mutex           // orders notifications and responses
	done   chan struct{}
	err    error // why in closed, once done is closed

	// version is the revision the handshake agreed, for the
	// MCP-Protocol-Version header (see versionHeader).
	version atomic.Value
	initMu  sync.Mutex
	initIDs map[string]bool

	// client and url open the standalone stream (sse.go), once.
	client    *http.Client
	url       string
	listening sync.Once
}

// dialTimeout bounds connecting to an upstream. Nothing bounds a whole
// exchange here: a call's answer may stream for as long as the call's
// own timeout allows, which the pump enforces as on stdio.
const dialTimeout = 30 * time.Second

// dialHTTP connects to a Streamable HTTP server at url. client is the
// HTTP client to use (nil: one of bailiff's own, with timeouts).
func dialHTTP(url string, client *http.Client) (*connStream, error) {
	s := &connStream{in: make(chan jsonrpc.Message, 16), local: make(chan jsonrpc.Message, 16),
		done: make(chan struct{}), initIDs: map[string]bool{}}
	if client == nil {
		client = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: dialTimeout}).DialContext,
			TLSHandshakeTimeout: dialTimeout,
			IdleConnTimeout:     90 * time.Second,
			MaxIdleConnsPerHost: 8,
		}}
	}
	// The SDK client sets MCP-Protocol-Version itself only once its own
	// ClientSession has seen the handshake; bailiff relays the handshake
	// instead, so it learns the version from the initialize result and
	// sets the header on requests that do not carry it in _meta.
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc := *client
	hc.Transport = versionHeader{base: base, s: s}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &hc, MaxRetries: -1,
		// The SDK opens the standalone stream for its own ClientSession
		// only; bailiff, which has none, opens it itself (sse.go).
		DisableStandaloneSSE: true}
	conn, err := t.Connect(s.ctx)
	if err != nil {
		s.cancel()
		return nil, fmt.Errorf("connect to %s: %v", url, err)
	}
	s.conn, s.client, s.url = conn, &hc, url
	go s.readLoop()
	return s, nil
}

type versionHeader struct {
	base http.RoundTripper
	s    *connStream
}

func (v versionHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Mcp-Protocol-Version") == "" {
		if pv, _ := v.s.version.Load().(string); pv != "" {
			r = r.Clone(r.Context())
			r.Header.Set("Mcp-Protocol-Version", pv)
		}
	}
	return v.base.RoundTrip(r)
}

func (s *connStream) readLoop() {
	defer close(s.done)
	for {
		m, err := s.conn.Read(s.ctx)
		if err != nil {
			s.err = err
			return
		}
		if r, ok := m.(*jsonrpc.Response); ok && r.Error == nil {
			s.initMu.Lock()
			isInit := s.initIDs[key(r.ID)]
			delete(s.initIDs, key(r.ID))
			s.initMu.Unlock()
			if isInit {
				var res struct {
					ProtocolVersion string `json:"protocolVersion"`
				}
				if json.Unmarshal(r.Result, &res) == nil && res.ProtocolVersion != "" {
					s.version.Store(res.ProtocolVersion)
					s.listenAfterHandshake(res.ProtocolVersion)
				}
			}
		}
		select {
		case s.in <- m:
		case <-s.ctx.Done():
			s.err = s.ctx.Err()
			return
		}
	}
}

func (s *connStream) read() ([]byte, error) {
	var m jsonrpc.Message
	select {
	case m = <-s.local:
	case m = <-s.in:
	case <-s.done:
		// What was read before the end still counts.
		select {
		case m = <-s.in:
		case m = <-s.local:
		default:
			if s.err == nil || errors.Is(s.err, context.Canceled) {
				return nil, io.EOF
			}
			return nil, s.err
		}
	}
	return jsonrpc.EncodeMessage(m)
}

func (s *connStream) sendRaw(b []byte) error {
	m, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return err
	}
	return s.send(m)
}

// send posts one message. A request's POST is made in the background,
// since its answer may come only when the server is done with it (a JSON
// response), and the pump must not wait on one request to send the
// next. A request the server never received is answered here with an
// error, so no caller waits out its timeout for nothing. Notifications
// and responses are posted in order, and at once (202 Accepted).
func (s *connStream) send(m jsonrpc.Message) error {
	if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
		if req.Method == "initialize" {
			s.initMu.Lock()
			s.initIDs[key(req.ID)] = true
			s.initMu.Unlock()
		}
		go func() {
			if err := s.conn.Write(s.ctx, req); err != nil {
				r := &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server did not take the request: " + err.Error()}}
				select {
				case s.local <- r:
				case <-s.ctx.Done():
				}
			}
		}()
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn.Write(s.ctx, m)
}

// close ends the session with the server (the SDK sends its DELETE).
func (s *connStream) close() error {
	err := s.conn.Close()
	s.cancel()
	return err
}
