package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

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
			p.serverResponse(ctx, u, m)
		case *jsonrpc.Request:
			p.serverRequest(ctx, u, m)
		}
	}
}

// serverResponse routes a server's answer: to the proxy's own request, a
// forwarded call, a client's tools/list or another relayed request;
// anything else is dropped.
func (p *Proxy) serverResponse(ctx context.Context, u *upstream, m *jsonrpc.Response) {
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
			return
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
}

// serverRequest records and relays what the server asks or tells the
// client (a gateway refuses the server's requests).
func (p *Proxy) serverRequest(ctx context.Context, u *upstream, m *jsonrpc.Request) {
	p.fromServerRequest(u, m)
	if m.Method == "notifications/tools/list_changed" {
		p.spawn(func() { p.relist(ctx, u) })
	}
	if !p.gateway {
		p.noteRootsRequest(m)
		p.toClient(m)
		return
	}
	switch {
	case m.ID.IsValid():
		// Asked of the client under an id of the gateway's own: the
		// answer goes back to the server that asked.
		if !p.spawn(func() { p.serverAsks(ctx, u, m) }) {
			p.toServer(u, rpcError(m.ID, jsonrpc.CodeInternalError, "the session is closing"))
		}
	case m.Method != "notifications/tools/list_changed":
		p.toClient(p.renameNotification(m, u.name))
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
