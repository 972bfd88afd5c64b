package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"bailiff/engine"
)

// Upstream is one server behind a gateway: its name (the prefix of its
// tools) and the command that starts it.
type Upstream struct {
	Name string
	Cmd  *exec.Cmd
}

// gatewayVersions are the protocol versions a gateway answers with: the
// client's if it is one of them, else the newest.
var gatewayVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// RunGateway starts every upstream and serves one client in front of all
// of them, as a single MCP server whose tools are "<server>.<tool>". All
// calls share one session, one audit log and one taint state: output read
// from one server taints destinations sent to through another.
func RunGateway(ctx context.Context, opt Options, in io.Reader, out io.Writer, ups []Upstream) error {
	p := newProxy(opt, in, out)
	p.gateway = true
	p.resolveLinks = true // every upstream is a command on this machine
	var stdins []io.Closer
	for _, u := range ups {
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
	}
	err := p.Serve(ctx)
	for i, u := range ups {
		stdins[i].Close()
		stop(u.Cmd)
	}
	return err
}

// initialize opens the gateway's own session with one upstream.
func (p *Proxy) initialize(ctx context.Context, u *upstream) error {
	params := map[string]any{
		"protocolVersion": gatewayVersions[0],
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "bailiff-gateway", "version": "1"},
	}
	if _, err := p.request(ctx, u, "initialize", params, p.opt.CallTimeout); err != nil {
		return err
	}
	n, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return u.wire.sendRaw(n)
}

// initializeResult is the gateway's answer to the client's initialize.
func (p *Proxy) initializeResult(id jsonrpc.ID, asked string) *jsonrpc.Response {
	version := gatewayVersions[0]
	if slices.Contains(gatewayVersions, asked) {
		version = asked
	}
	res, _ := json.Marshal(map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}},
		"serverInfo":      map[string]any{"name": "bailiff-gateway", "version": "1"},
		"instructions":    "Tools are named <server>.<tool>. Every call is checked by bailiff's policy before it reaches the server.",
	})
	return &jsonrpc.Response{ID: id, Result: res}
}

// gatewayRequest answers what a gateway answers itself. It serves tools
// only: resources and prompts of the servers behind it are not merged.
func (p *Proxy) gatewayRequest(ctx context.Context, m *jsonrpc.Request) {
	if !m.ID.IsValid() {
		return // notifications: initialized, cancelled, roots changed
	}
	var result any
	switch m.Method {
	case "ping":
		result = map[string]any{}
	case "tools/list":
		if !p.started(ctx) {
			p.toClient(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the gateway could not start its servers"}})
			return
		}
		result = map[string]any{"tools": p.gatewayTools()}
	case "resources/list":
		result = map[string]any{"resources": []any{}}
	case "resources/templates/list":
		result = map[string]any{"resourceTemplates": []any{}}
	case "prompts/list":
		result = map[string]any{"prompts": []any{}}
	default:
		p.toClient(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "bailiff gateway does not serve " + m.Method}})
		return
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
			tool["name"] = u.name + "." + tool["name"].(string)
			out = append(out, tool)
		}
	}
	return out
}
