package proxy

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

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
			// The answer names what the servers serve: it waits for
			// them to have said (the servers start with the gateway).
			p.started(ctx)
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
