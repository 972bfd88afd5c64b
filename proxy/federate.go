package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"bailiff/audit"
	"bailiff/engine"
)

// A gateway serves more than its servers' tools: their resources,
// resource templates, prompts and completions too, each under the name
// of the server it comes from, as tools are: a prompt is
// "<server>.<name>", a resource's URI "<server>.<uri>" (a URI scheme may
// hold a dot, and a server name may not, so the first dot always names
// the server: docs/decisions.md). Lists are merged, in the order of the
// config; a request naming one is routed to its server with the name it
// has there. Every answer a server gives is recorded, and taints, as a
// relayed answer does behind `bailiff run`.

// federatedList is a list method and how its items are named.
type federatedList struct {
	capability string // the server capability that serves it
	field      string // the result's list
	key        string // each item's name or URI
}

var federatedLists = map[string]federatedList{
	"resources/list":           {"resources", "resources", "uri"},
	"resources/templates/list": {"resources", "resourceTemplates", "uriTemplate"},
	"prompts/list":             {"prompts", "prompts", "name"},
}

// maxFederatedPages bounds the pages read from one server for one list,
// as for its tools.
const maxFederatedPages = 100

// federate answers a client request the gateway federates, and reports
// whether m was one.
func (p *Proxy) federate(ctx context.Context, m *jsonrpc.Request) bool {
	var fn func()
	switch m.Method {
	case "resources/list", "resources/templates/list", "prompts/list":
		fn = func() { p.mergeLists(ctx, m) }
	case "resources/read", "resources/subscribe", "resources/unsubscribe", "prompts/get", "completion/complete":
		fn = func() { p.routeRequest(ctx, m) }
	case "logging/setLevel":
		fn = func() { p.everyServer(ctx, m, "logging") }
	default:
		return false
	}
	// Each waits on servers: the client's next message is read meanwhile.
	p.inCalls.Add(1)
	if !p.spawn(func() { defer p.inCalls.Done(); fn() }) {
		p.inCalls.Done()
	}
	return true
}

// serving are the servers in the session that declared capability.
func (p *Proxy) serving(capability string) []*upstream {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*upstream
	for _, u := range p.ups {
		if !u.dropped && u.caps[capability] != nil {
			out = append(out, u)
		}
	}
	return out
}

// mergeLists answers a list with every server's whole list, renamed, in
// one page.
func (p *Proxy) mergeLists(ctx context.Context, m *jsonrpc.Request) {
	if !p.started(ctx) {
		p.toClient(rpcError(m.ID, jsonrpc.CodeInternalError, "the gateway could not start its servers"))
		return
	}
	var params struct {
		Cursor *string `json:"cursor"`
	}
	if json.Unmarshal(m.Params, &params) == nil && params.Cursor != nil {
		p.toClient(rpcError(m.ID, jsonrpc.CodeInvalidParams, "the gateway lists everything in one page: there is no next page"))
		return
	}
	kind := federatedLists[m.Method]
	all := []json.RawMessage{}
	for _, u := range p.serving(kind.capability) {
		items, err := p.listAll(ctx, u, m.Method, kind.field)
		if err != nil {
			p.logf("cannot list %s of %s (left out): %v", kind.field, u.name, err)
			continue
		}
		for _, item := range items {
			if renamed, ok := p.rename(item, kind.key, u.name); ok {
				all = append(all, renamed)
			}
		}
	}
	p.answer(m.ID, map[string]any{kind.field: all})
}

// listAll reads a server's whole list, page by page, recording each page
// as it comes.
func (p *Proxy) listAll(ctx context.Context, u *upstream, method, field string) ([]json.RawMessage, error) {
	var items []json.RawMessage
	params := p.withOwnMeta(u, map[string]any{})
	for range maxFederatedPages {
		r, err := p.askFor(ctx, u, method, params)
		if err != nil {
			return nil, err
		}
		var page map[string]json.RawMessage
		var got []json.RawMessage
		var next string
		if json.Unmarshal(r.Result, &page) != nil || json.Unmarshal(page[field], &got) != nil {
			return nil, fmt.Errorf("%s result holds no %s list", method, field)
		}
		items = append(items, got...)
		if json.Unmarshal(page["nextCursor"], &next) != nil || next == "" {
			return items, nil
		}
		params = p.withOwnMeta(u, map[string]any{"cursor": next})
	}
	return nil, fmt.Errorf("%s paginates without end", method)
}

// askFor sends a server one request of the gateway's own on the client's
// behalf and records the answer, result or error, as the relayed answer
// it becomes. A result asking the client for more input is refused: the
// client's answers would reach the server in a retry bailiff does not
// see (as behind bailiff run).
func (p *Proxy) askFor(ctx context.Context, u *upstream, method string, params map[string]any) (*jsonrpc.Response, error) {
	r, err := p.request(ctx, u, method, params, p.opt.CallTimeout)
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr):
		p.observe(u, method, audit.StatusFailed, errorOutput(rpcErr))
		return nil, err
	case err != nil:
		return nil, err
	}
	p.observe(u, method, audit.StatusOK, payload(r.Result))
	if k := relayedAsksInput(r.Result); k != "" {
		return nil, fmt.Errorf("%s asked the client for more input in a result (%s), which bailiff does not relay", u.name, k)
	}
	return r, nil
}

// publicName is what the gateway's client calls server's name (of a
// tool, a prompt, a URI): "<server>.<name>", or, for a gateway serving
// one server unprefixed, the name itself.
func (p *Proxy) publicName(server, name string) string {
	if p.opt.Unprefixed {
		return name
	}
	return server + "." + name
}

// instructions tell the client how the gateway names things.
func (p *Proxy) instructions() string {
	if p.opt.Unprefixed {
		return "Every call is checked by bailiff's policy before it reaches the server."
	}
	return gatewayInstructions
}

// rename is item with its key (a name or URI) as the client knows it.
func (p *Proxy) rename(item json.RawMessage, key, server string) (json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	var name string
	if json.Unmarshal(item, &fields) != nil || json.Unmarshal(fields[key], &name) != nil {
		return nil, false // an item without its name cannot be asked for
	}
	fields[key], _ = json.Marshal(p.publicName(server, name))
	out, err := json.Marshal(fields)
	return out, err == nil
}

// routeRequest sends a request naming one server's prompt or resource
// to that server, under the name it has there, and relays its answer.
func (p *Proxy) routeRequest(ctx context.Context, m *jsonrpc.Request) {
	if !p.started(ctx) {
		p.toClient(rpcError(m.ID, jsonrpc.CodeInternalError, "the gateway could not start its servers"))
		return
	}
	// Decoded exactly, as a call's params are: a key given twice would
	// show bailiff one name and the server another.
	v, err := engine.DecodeJSON(m.Params)
	params, _ := v.(map[string]any)
	if err != nil || params == nil {
		p.toClient(rpcError(m.ID, jsonrpc.CodeInvalidParams, m.Method+": params must be one JSON object, each key once"))
		return
	}
	u, why := p.routeParams(m.Method, params)
	if u == nil {
		p.toClient(rpcError(m.ID, jsonrpc.CodeInvalidParams, why))
		return
	}
	delete(params, "_meta")
	if meta, ok := jsonObject(m.Params, "_meta"); ok {
		params["_meta"] = p.gatewayCallMeta(u, meta)
	} else {
		p.withOwnMeta(u, params)
	}
	r, err := p.askFor(ctx, u, m.Method, params)
	if err != nil {
		p.toClient(relayedError(m.ID, err))
		return
	}
	res := r.Result
	if m.Method == "resources/read" && !p.opt.Unprefixed {
		res = p.renameContents(res, u.name)
	}
	p.toClient(&jsonrpc.Response{ID: m.ID, Result: res})
}

// routeParams finds the server a request names and puts back the name it
// has there; nil and why when it names none.
func (p *Proxy) routeParams(method string, params map[string]any) (*upstream, string) {
	field, in := "uri", params
	switch method {
	case "prompts/get":
		field = "name"
	case "completion/complete":
		ref, _ := params["ref"].(map[string]any)
		if ref == nil {
			return nil, "completion/complete: params need a ref object"
		}
		in = ref
		if ref["type"] == "ref/prompt" {
			field = "name"
		}
	}
	name, _ := in[field].(string)
	server, rest, ok := strings.Cut(name, ".")
	if p.opt.Unprefixed {
		server, rest, ok = p.ups[0].name, name, true
	}
	p.mu.Lock()
	u := p.byName[server]
	p.mu.Unlock()
	if !ok || u == nil || rest == "" || u.dropped {
		return nil, fmt.Sprintf("%s: no server of this gateway has %s %q (a gateway names them <server>.<%s>)", method, field, name, field)
	}
	in[field] = rest
	return u, ""
}

// renameContents prefixes the URIs a resources/read answer holds.
func (p *Proxy) renameContents(res json.RawMessage, server string) json.RawMessage {
	var fields map[string]json.RawMessage
	var contents []json.RawMessage
	if json.Unmarshal(res, &fields) != nil || json.Unmarshal(fields["contents"], &contents) != nil {
		return res
	}
	for i, c := range contents {
		if renamed, ok := p.rename(c, "uri", server); ok {
			contents[i] = renamed
		}
	}
	fields["contents"], _ = json.Marshal(contents)
	out, err := json.Marshal(fields)
	if err != nil {
		return res
	}
	return out
}

// everyServer sends a request every server declaring capability is to
// see (logging/setLevel), and answers once all have: with an error
// naming those that refused it.
func (p *Proxy) everyServer(ctx context.Context, m *jsonrpc.Request, capability string) {
	if !p.started(ctx) {
		p.toClient(rpcError(m.ID, jsonrpc.CodeInternalError, "the gateway could not start its servers"))
		return
	}
	var refused []string
	for _, u := range p.serving(capability) {
		params := map[string]any{}
		_ = json.Unmarshal(m.Params, &params)
		delete(params, "_meta")
		if _, err := p.askFor(ctx, u, m.Method, p.withOwnMeta(u, params)); err != nil {
			refused = append(refused, u.name+": "+err.Error())
		}
	}
	if len(refused) > 0 {
		p.toClient(rpcError(m.ID, jsonrpc.CodeInternalError, m.Method+" was refused by "+strings.Join(refused, "; ")))
		return
	}
	p.answer(m.ID, map[string]any{})
}

// answer sends the client the gateway's own result.
func (p *Proxy) answer(id jsonrpc.ID, result map[string]any) {
	p.mu.Lock()
	stateless := p.stateless
	p.mu.Unlock()
	if stateless {
		result["resultType"] = "complete"
	}
	res, _ := json.Marshal(result)
	p.toClient(&jsonrpc.Response{ID: id, Result: res})
}

func rpcError(id jsonrpc.ID, code int64, msg string) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}}
}

// relayedError is a server's error as the client gets it: the server's
// own, or bailiff's when there was no answer.
func relayedError(id jsonrpc.ID, err error) *jsonrpc.Response {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return &jsonrpc.Response{ID: id, Error: rpcErr}
	}
	return rpcError(id, jsonrpc.CodeInternalError, "bailiff: "+err.Error())
}

// jsonObject is the object raw holds under key, if any.
func jsonObject(raw json.RawMessage, key string) (map[string]any, bool) {
	var fields map[string]any
	if json.Unmarshal(raw, &fields) != nil {
		return nil, false
	}
	obj, ok := fields[key].(map[string]any)
	return obj, ok
}

// serverAsks relays a server's request to the gateway's client
// (sampling, elicitation, roots, ping) as a request of the gateway's
// own, and its answer back under the server's id: two servers' ids
// would collide at the client. Roots the client gives are screened as
// behind bailiff run. A client that cannot be asked (on HTTP) refuses
// at once, and the server gets that refusal.
func (p *Proxy) serverAsks(ctx context.Context, u *upstream, m *jsonrpc.Request) {
	var params any = struct{}{}
	if len(m.Params) > 0 {
		params = m.Params
	}
	r, err := p.request(ctx, nil, m.Method, params, p.opt.CallTimeout)
	if err != nil {
		p.toServer(u, relayedError(m.ID, err))
		return
	}
	r = &jsonrpc.Response{ID: m.ID, Result: r.Result}
	if m.Method == "roots/list" {
		r = p.screenRootsAnswer(r, u.name)
	}
	p.toServer(u, r)
}

// renameNotification prefixes the URI of a server's
// notifications/resources/updated, so the client can match it to the
// resource it subscribed to.
func (p *Proxy) renameNotification(m *jsonrpc.Request, server string) *jsonrpc.Request {
	if m.Method != "notifications/resources/updated" || p.opt.Unprefixed {
		return m
	}
	if renamed, ok := p.rename(m.Params, "uri", server); ok {
		return &jsonrpc.Request{Method: m.Method, Params: renamed}
	}
	return m
}
