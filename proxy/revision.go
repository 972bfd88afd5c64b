package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MCP revision 2026-07-28 is stateless: no initialize handshake, no
// initialized notification. Every request says in its _meta which
// revision it speaks and what the client can do, and a client may start
// with server/discover, or with no handshake at all. So the session can
// no longer learn when it has started from a notification: it pins on
// the first message that needs (or announces) the server's tools.

const (
	// revStateless is the first revision with per-request _meta. MCP
	// revisions are dates, so they order as strings (the SDK compares
	// them so too).
	revStateless = "2026-07-28"

	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"

	// codeUnsupportedVersion is the SDK's (and the revision's) error for a
	// protocolVersion the server does not speak.
	codeUnsupportedVersion = -32022
)

// sessionMetaKeys are the _meta keys that stand for the old handshake:
// they belong to one session between two peers, so a gateway, which
// holds sessions of its own with its servers, never passes them through.
var sessionMetaKeys = []string{metaProtocolVersion, metaClientInfo, metaClientCapabilities, metaLogLevel}

// requestMeta reads a request's _meta leniently, as the SDK server does:
// absent params or _meta are no _meta. A _meta that is not an object is
// an error (a server could not read it either).
func requestMeta(params json.RawMessage) (map[string]json.RawMessage, error) {
	if len(params) == 0 || string(params) == "null" {
		return nil, nil
	}
	var p struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("params cannot be read: %v", err)
	}
	if len(p.Meta) == 0 || string(p.Meta) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(p.Meta, &m); err != nil {
		return nil, fmt.Errorf("_meta is not an object")
	}
	return m, nil
}

// checkRevision enforces the revision's rule for a client request and
// learns the session's revision from it. The SDK server takes a request
// whose _meta names 2026-07-28 or later as one of that revision and then
// requires clientCapabilities (an object); without a protocolVersion it
// reads the request as one of the old handshake. A proxy cannot leave it
// there: once the session is known to speak the stateless revision (a
// request said so, or the client sent server/discover), a request that
// does not say which revision it is could be read by the server as
// another session's, so it is refused as the revision requires: -32602,
// and a malformed record. Notifications carry no such _meta and are
// never refused. It reports whether the request may go on.
func (p *Proxy) checkRevision(m *jsonrpc.Request) bool {
	if !m.ID.IsValid() {
		return true
	}
	meta, err := requestMeta(m.Params)
	if err != nil {
		p.malformed(m.ID, m.Params, m.Method+": "+err.Error(), jsonrpc.CodeInvalidParams)
		return false
	}
	p.mu.Lock()
	stateless := p.stateless
	p.mu.Unlock()
	rawVersion, hasVersion := meta[metaProtocolVersion]
	if !hasVersion {
		if stateless || m.Method == "server/discover" {
			p.malformed(m.ID, m.Params, fmt.Sprintf("%s: missing _meta field %q (revision %s requires it on every request)", m.Method, metaProtocolVersion, revStateless), jsonrpc.CodeInvalidParams)
			return false
		}
		return true
	}
	var version string
	if err := json.Unmarshal(rawVersion, &version); err != nil {
		p.malformed(m.ID, m.Params, fmt.Sprintf("%s: _meta field %q is not a string", m.Method, metaProtocolVersion), jsonrpc.CodeInvalidParams)
		return false
	}
	if version < revStateless {
		if stateless || m.Method == "server/discover" {
			p.malformed(m.ID, m.Params, fmt.Sprintf("%s: _meta field %q names %q in a session of revision %s or later", m.Method, metaProtocolVersion, version, revStateless), jsonrpc.CodeInvalidParams)
			return false
		}
		return true
	}
	p.mu.Lock()
	shook := p.shook
	p.mu.Unlock()
	if shook && !stateless {
		// What the handshake settled (capabilities, and so whether an
		// ask may be put in band) is not changed by one request saying
		// otherwise: a client that could not elicit would approve itself.
		p.malformed(m.ID, m.Params, fmt.Sprintf("%s: _meta names revision %q in a session that began with initialize: a request cannot switch it to the stateless revision", m.Method, version), jsonrpc.CodeInvalidParams)
		return false
	}
	var caps map[string]any
	if err := json.Unmarshal(meta[metaClientCapabilities], &caps); err != nil || caps == nil {
		p.malformed(m.ID, m.Params, fmt.Sprintf("%s: missing or invalid _meta field %q", m.Method, metaClientCapabilities), jsonrpc.CodeInvalidParams)
		return false
	}
	own := map[string]any{metaProtocolVersion: version, metaClientCapabilities: caps}
	if raw, ok := meta[metaClientInfo]; ok {
		var info map[string]any
		if err := json.Unmarshal(raw, &info); err != nil || info == nil {
			p.malformed(m.ID, m.Params, fmt.Sprintf("%s: invalid _meta field %q", m.Method, metaClientInfo), jsonrpc.CodeInvalidParams)
			return false
		}
		own[metaClientInfo] = info
	}
	if m.Method == "server/discover" {
		// A discover is the client's question whether the server speaks
		// the revision: until the server says it does, the session is
		// not stateless (a client refused falls back to initialize,
		// without the revision's _meta).
		p.mu.Lock()
		if p.discovering == nil {
			p.discovering = map[string]map[string]any{}
		}
		p.discovering[key(m.ID)] = own
		p.mu.Unlock()
		return true
	}
	p.goStateless(own)
	return true
}

// goStateless makes the session one of the stateless revision, its
// client's _meta own.
func (p *Proxy) goStateless(own map[string]any) {
	p.mu.Lock()
	p.stateless = true
	// The proxy's own requests (its tools/list) go out as this client's:
	// a stateless server knows nothing of the client but what each
	// request says, and should see the same client bailiff relays.
	p.clientMeta = own
	// The revision asks the human through the call's own result
	// (input_required, mrtr.go), not a request of the server's, and only
	// a client that says it can elicit can put the question to a human;
	// any other waits for an out-of-band approval. Each request says
	// anew what the client can do.
	_, p.canElicit = own[metaClientCapabilities].(map[string]any)["elicitation"]
	p.mu.Unlock()
}

// discovered reads the answer (the server's, or a gateway's own) to a
// client request: an answer to server/discover that is a result naming
// the revision the client asked for makes the session stateless and
// starts the pin, which the server can now serve. Any other answer
// leaves the session as it was: the SDK client then falls back to
// initialize (or asks again), and the next request says what it is.
func (p *Proxy) discovered(ctx context.Context, r *jsonrpc.Response) {
	p.mu.Lock()
	own, ok := p.discovering[key(r.ID)]
	delete(p.discovering, key(r.ID))
	p.mu.Unlock()
	if !ok || r.Error != nil {
		return
	}
	var res struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if json.Unmarshal(r.Result, &res) != nil || !slices.Contains(res.SupportedVersions, own[metaProtocolVersion].(string)) {
		return
	}
	p.goStateless(own)
	p.startPin(ctx)
}

// ownMeta is the _meta the proxy's own requests to u carry: the
// revision's triple when u speaks the stateless revision, else none.
func (p *Proxy) ownMeta(u *upstream) map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	src := p.clientMeta
	if p.gateway {
		src = u.meta
	}
	if src == nil {
		return nil
	}
	out := make(map[string]any, len(src))
	for k, v := range src {
		out[k] = v
	}
	return out
}

// withOwnMeta adds the proxy's own _meta (ownMeta) to params.
func (p *Proxy) withOwnMeta(u *upstream, params map[string]any) map[string]any {
	if meta := p.ownMeta(u); meta != nil {
		params["_meta"] = meta
	}
	return params
}

// gatewayCallMeta is the _meta a gateway forwards with a call to u: the
// client's own keys (a progress token, say), without the session keys of
// the client's session with the gateway, with those of the gateway's own
// session with u. A _meta that is not an object is left out: the gateway
// would not know what it passes on.
func (p *Proxy) gatewayCallMeta(u *upstream, meta any) any {
	out := map[string]any{}
	if m, ok := meta.(map[string]any); ok {
		for k, v := range m {
			out[k] = v
		}
	}
	for _, k := range sessionMetaKeys {
		delete(out, k)
	}
	for k, v := range p.ownMeta(u) {
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// resultType is a result's resultType: "complete" when absent, as an
// older server (one of a revision before it) always means.
func resultType(m map[string]any) (string, bool) {
	v, present := m["resultType"]
	if !present {
		return "complete", true
	}
	s, ok := v.(string)
	return s, ok
}

// inputKey names the key of a result that asks the client for more
// input (inputRequests, requestState), in any case, or "": a client's
// multi-round-trip handling acts on one whatever resultType says.
func inputKey(m map[string]any) string {
	// In key order, so that the reason a call is refused with, which the
	// log records, is the same on every run.
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if strings.EqualFold(k, "inputRequests") || strings.EqualFold(k, "requestState") {
			return k
		}
	}
	return ""
}

// relayedAsksInput reads a relayed result (prompts/get, resources/read,
// …) as a client would, and names the key that asks for more input. Only
// the top-level keys are decoded: the values (a resource's contents) are
// relayed, not read, on this path.
func relayedAsksInput(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if strings.EqualFold(k, "inputRequests") || strings.EqualFold(k, "requestState") {
			return k
		}
	}
	if rt, present := m["resultType"]; present {
		var s string
		if json.Unmarshal(rt, &s) != nil || s != "complete" {
			return "resultType"
		}
	}
	return ""
}
