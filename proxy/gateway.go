package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"bailiff/engine"
)

// Upstream is one server behind a gateway: its name (the prefix of its
// tools) and either the command that starts it or the URL of its
// Streamable HTTP endpoint.
type Upstream struct {
	Name string
	Cmd  *exec.Cmd
	URL  string
}

// gatewayVersions are the protocol versions a gateway speaks, newest
// first: those of the Go SDK it is built on.
var gatewayVersions = []string{revStateless, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// handshakeVersion is the newest revision with the initialize handshake:
// an initialize is answered with the client's version if it is one of
// the handshake's, else this one (as the SDK server does: a stateless
// revision is never negotiated by initialize).
const handshakeVersion = "2025-11-25"

// gatewayInfo is how the gateway names itself to clients and servers.
var gatewayInfo = map[string]any{"name": "bailiff-gateway", "version": "1"}

const gatewayInstructions = "Tools are named <server>.<tool>. Every call is checked by bailiff's policy before it reaches the server."

// RunGateway starts every upstream and serves one client in front of all
// of them, as a single MCP server whose tools are "<server>.<tool>". All
// calls share one session, one audit log and one taint state: output read
// from one server taints destinations sent to through another.
func RunGateway(ctx context.Context, opt Options, in io.Reader, out io.Writer, ups []Upstream) error {
	return runGateway(ctx, newProxy(opt, in, out), ups)
}

func runGateway(ctx context.Context, p *Proxy, ups []Upstream) error {
	opt := p.opt
	p.gateway = true
	// Paths are resolved for the servers started here (resolve skips
	// those reached over HTTP).
	p.resolveLinks = true
	var stdins []io.Closer
	var cmds []*exec.Cmd
	defer func() {
		for i, c := range cmds {
			stdins[i].Close()
			stop(c)
		}
	}()
	if opt.Unprefixed && len(ups) != 1 {
		return fmt.Errorf("a gateway serves names without \"<server>.\" only for one server, not %d", len(ups))
	}
	for _, u := range ups {
		if u.Name == opt.Server || engine.CheckServerName(u.Name) != nil || p.byName[u.Name] != nil {
			// The engine reads a call to the session's own server as
			// unprefixed: "<that server>.<tool>" would take the pin (and
			// what the schema fixes) of another server's tool.
			return fmt.Errorf("upstream name %q: a server is named once, with no dot or space, and not %q, the gateway's own name", u.Name, opt.Server)
		}
		if u.URL != "" {
			s, err := dialHTTP(u.URL, nil)
			if err != nil {
				return fmt.Errorf("%s: %w", u.Name, err)
			}
			defer s.close()
			p.addUpstreamOn(u.Name, s)
			continue
		}
		upIn, err := u.Cmd.StdinPipe()
		if err != nil {
			return err
		}
		upOut, err := u.Cmd.StdoutPipe()
		if err != nil {
			return err
		}
		u.Cmd.Stderr = opt.Stderr
		if err := u.Cmd.Start(); err != nil {
			return fmt.Errorf("start %s: %w", u.Name, err)
		}
		p.addUpstream(u.Name, upOut, upIn)
		stdins = append(stdins, upIn)
		cmds = append(cmds, u.Cmd)
	}
	return p.Serve(ctx)
}

// initialize opens the gateway's own session with one upstream. On
// stdio it tries the initialize handshake first: that session carries
// the server's list_changed notifications, which the stateless revision
// sends only on a subscriptions/listen stream bailiff does not open yet,
// and every SDK server still speaks it. A server that refuses it (one of
// the stateless revision only) is asked server/discover, and is then
// sent the revision's _meta on every request. Over HTTP the order is the
// other way round, as the SDK client's: the SDK's stateless handler
// answers initialize for a revision it then refuses, and an HTTP session
// carries no list_changed for bailiff either way (no standalone stream).
func (p *Proxy) initialize(ctx context.Context, u *upstream) error {
	if _, isHTTP := u.wire.(*connStream); isHTTP {
		derr := p.discover(ctx, u)
		if derr == nil {
			return nil
		}
		if err := p.handshake(ctx, u); err != nil {
			return fmt.Errorf("server/discover: %v; initialize: %v", derr, err)
		}
		return nil
	}
	err := p.handshake(ctx, u)
	var rpcErr *jsonrpc.Error
	if err == nil || !errors.As(err, &rpcErr) {
		return err // no answer at all: asking again would wait as long
	}
	if derr := p.discover(ctx, u); derr != nil {
		return fmt.Errorf("%v; server/discover: %v", err, derr)
	}
	return nil
}

// handshake is the initialize handshake at handshakeVersion.
func (p *Proxy) handshake(ctx context.Context, u *upstream) error {
	params := map[string]any{
		"protocolVersion": handshakeVersion,
		"capabilities":    clientAsksRelayed(),
		"clientInfo":      gatewayInfo,
	}
	r, err := p.request(ctx, u, "initialize", params, p.opt.CallTimeout)
	if err != nil {
		return err
	}
	p.noteCapabilities(u, r.Result)
	n, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return u.wire.sendRaw(n)
}

// discover asks server/discover at the stateless revision and, if the
// server speaks it, makes the session one of that revision.
func (p *Proxy) discover(ctx context.Context, u *upstream) error {
	meta := map[string]any{metaProtocolVersion: revStateless, metaClientInfo: gatewayInfo, metaClientCapabilities: clientAsksRelayed()}
	r, err := p.request(ctx, u, "server/discover", map[string]any{"_meta": meta}, p.opt.CallTimeout)
	if err != nil {
		return err
	}
	var res struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if json.Unmarshal(r.Result, &res) != nil || !slices.Contains(res.SupportedVersions, revStateless) {
		return fmt.Errorf("server/discover names no revision bailiff speaks (%v)", res.SupportedVersions)
	}
	p.mu.Lock()
	u.meta = meta
	p.mu.Unlock()
	p.noteCapabilities(u, r.Result)
	return nil
}

// clientAsksRelayed is what the gateway tells its servers it can do, as
// their client: the requests it relays to its own client. It says so
// before its client has said what it can do (the servers start first);
// a request the client cannot take is refused to the server then. Roots
// are not offered: a client's roots name its workspace, not which of
// several servers may see what, which their command lines say; a server
// offered them asks at once and waits (server-everything holds its
// process a minute on it). One that asks anyway is relayed, screened.
func clientAsksRelayed() map[string]any {
	return map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}}
}

// noteCapabilities keeps what a server said it serves, from its
// initialize or server/discover result.
func (p *Proxy) noteCapabilities(u *upstream, result json.RawMessage) {
	var res struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	_ = json.Unmarshal(result, &res)
	p.mu.Lock()
	u.caps = res.Capabilities
	p.mu.Unlock()
}

// initializeResult is the gateway's answer to the client's initialize.
func (p *Proxy) initializeResult(id jsonrpc.ID, asked string) *jsonrpc.Response {
	version := handshakeVersion
	if slices.Contains(gatewayVersions, asked) && asked < revStateless {
		version = asked
	}
	res, _ := json.Marshal(map[string]any{
		"protocolVersion": version,
		"capabilities":    p.gatewayCapabilities(),
		"serverInfo":      gatewayInfo,
		"instructions":    p.instructions(),
	})
	return &jsonrpc.Response{ID: id, Result: res}
}

// gatewayCapabilities are tools, and what any of its servers serves of
// what the gateway federates.
func (p *Proxy) gatewayCapabilities() map[string]any {
	caps := map[string]any{"tools": map[string]any{"listChanged": true}}
	if resources := p.serving("resources"); len(resources) > 0 {
		subscribe := false
		for _, u := range resources {
			var r struct {
				Subscribe bool `json:"subscribe"`
			}
			_ = json.Unmarshal(u.caps["resources"], &r)
			subscribe = subscribe || r.Subscribe
		}
		caps["resources"] = map[string]any{"listChanged": true, "subscribe": subscribe}
	}
	if len(p.serving("prompts")) > 0 {
		caps["prompts"] = map[string]any{"listChanged": true}
	}
	for _, c := range []string{"completions", "logging"} {
		if len(p.serving(c)) > 0 {
			caps[c] = map[string]any{}
		}
	}
	return caps
}

// discoverResult is the gateway's answer to server/discover, shaped as
// the SDK server's: every revision it speaks, its capabilities, its
// identity in _meta. checkRevision has already required the _meta.
func (p *Proxy) discoverResult(m *jsonrpc.Request) *jsonrpc.Response {
	meta, _ := requestMeta(m.Params)
	var asked string
	_ = json.Unmarshal(meta[metaProtocolVersion], &asked)
	if !slices.Contains(gatewayVersions, asked) {
		data, _ := json.Marshal(map[string]any{"supported": gatewayVersions, "requested": asked})
		return &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: codeUnsupportedVersion, Message: "unsupported protocol version", Data: data}}
	}
	res, _ := json.Marshal(map[string]any{
		"resultType":        "complete",
		"_meta":             map[string]any{metaServerInfo: gatewayInfo},
		"ttlMs":             0,
		"cacheScope":        "public",
		"supportedVersions": gatewayVersions,
		"capabilities":      p.gatewayCapabilities(),
		"instructions":      p.instructions(),
	})
	return &jsonrpc.Response{ID: m.ID, Result: res}
}

// gatewayRequest answers what a gateway answers itself, and federates
// the rest (federate.go).
func (p *Proxy) gatewayRequest(ctx context.Context, m *jsonrpc.Request) {
	if !m.ID.IsValid() {
		if m.Method == "notifications/roots/list_changed" {
			// Every server was told the gateway has roots: each may
			// ask for them again.
			for _, u := range p.ups {
				p.toServer(u, m)
			}
		}
		return // the others: initialized, cancelled, progress
	}
	if p.federate(ctx, m) {
		return
	}
	var result map[string]any
	switch m.Method {
	case "server/discover":
		p.started(ctx)
		r := p.discoverResult(m)
		p.discovered(ctx, r)
		p.toClient(r)
		return
	case "subscriptions/listen":
		// The revision's stream for notifications. The gateway agrees to
		// none yet (its list_changed goes out unsolicited, as under the
		// handshake), and says so as the SDK server does: an
		// acknowledgement naming nothing, then at once the result.
		sub := map[string]any{metaSubscriptionID: m.ID.Raw()}
		ack, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
			"params": map[string]any{"_meta": sub, "notifications": map[string]any{}}})
		if err := p.down.sendRaw(ack); err != nil {
			p.logf("cannot write to the client: %v", err)
		}
		result = map[string]any{"_meta": sub}
	case "ping":
		result = map[string]any{}
	case "tools/list":
		if !p.started(ctx) {
			p.toClient(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway could not start its servers"}})
			return
		}
		result = map[string]any{"tools": p.gatewayTools()}
	default:
		p.toClient(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "bailiff gateway does not serve " + m.Method}})
		return
	}
	p.mu.Lock()
	stateless := p.stateless
	p.mu.Unlock()
	if stateless && m.Method != "ping" {
		result["resultType"] = "complete"
	}
	res, _ := json.Marshal(result)
	p.toClient(&jsonrpc.Response{ID: m.ID, Result: res})
}

// gatewayTools lists every server's tools under "<server>.<tool>",
// without those the policy denies outright and without any whose
// definition is not the one pinned (a rug pull re-listed after
// list_changed stays out of sight until a human accepts it).
func (p *Proxy) gatewayTools() []any {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []any{}
	for _, u := range p.ups {
		var tools []any
		for _, t := range u.tools {
			if v, err := engine.DecodeJSON(t); err == nil {
				tools = append(tools, v)
			}
		}
		kept, unseen := p.screen(u, tools)
		if len(unseen) > 0 {
			p.recordSeen(unseen)
		}
		for _, t := range kept {
			// screen read each as an object with a string name.
			tool := t.(map[string]any)
			tool["name"] = p.publicName(u.name, tool["name"].(string))
			out = append(out, tool)
		}
	}
	return out
}
