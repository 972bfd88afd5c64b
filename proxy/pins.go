package proxy

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"bailiff/audit"
	"bailiff/engine"
)

// Pinning is only as good as the list it pins. A server can answer the
// proxy's own tools/list with one definition and the client's with
// another (it can tell them apart by the request id, or by their order),
// so the pins must cover what the client sees: every tools/list answer
// relayed to the client is checked against them, and a definition that
// is not the pinned one never reaches the model.

// relayList passes the server's answer to one of the client's tools/list
// requests on, checked against the pins. The check waits for the pin (a
// client may list before the proxy has), so it runs beside the server's
// read loop, which the pin's own answers come through.
func (p *Proxy) relayList(ctx context.Context, r *jsonrpc.Response) {
	if !p.spawn(func() { p.toClient(p.checkList(ctx, r)) }) {
		p.toClient(listError(r.ID, errors.New("the session is closing")))
	}
}

// checkList returns the answer the client gets for a server's tools/list
// answer: without the tools the policy denies outright and without every
// tool whose definition is not the one pinned, re-encoded from exactly
// what was checked. A definition seen for the first time is recorded (a
// tools record), so calls to it are denied by pinning — and the log says
// why — until a human accepts it. An answer that cannot be read is an
// error: nothing reaches the client unchecked.
func (p *Proxy) checkList(ctx context.Context, r *jsonrpc.Response) *jsonrpc.Response {
	if r.Error != nil {
		return &jsonrpc.Response{ID: r.ID, Error: r.Error}
	}
	if !p.started(ctx) {
		reason := errors.New("the session has not started: the server's tools were never pinned")
		if p.pinErr != nil {
			reason = p.pinErr
		}
		return listError(r.ID, reason)
	}
	// Decoded strictly, as calls are: a key given twice, at any depth,
	// could show the proxy one definition and the client another.
	v, err := engine.DecodeJSON(r.Result)
	if err != nil {
		return p.unreadable(r.ID, err)
	}
	res, ok := v.(map[string]any)
	if !ok {
		return p.unreadable(r.ID, errors.New("the result is not an object"))
	}
	if rt, ok := resultType(res); !ok || rt != "complete" {
		return p.unreadable(r.ID, fmt.Errorf("the result is not complete (resultType %v)", res["resultType"]))
	}
	tools, ok := res["tools"].([]any)
	if !ok {
		return p.unreadable(r.ID, errors.New(`"tools" is not a list`))
	}
	u := p.ups[0]
	p.mu.Lock()
	kept, unseen := p.screen(u, tools)
	if len(unseen) > 0 {
		p.recordSeen(unseen)
	}
	p.mu.Unlock()
	res["tools"] = kept
	return &jsonrpc.Response{ID: r.ID, Result: engine.CanonicalJSON(res)}
}

// ownListing indexes the tools bailiff was shown itself, by the pinned
// name and digest. Called with p.mu held.
func (p *Proxy) ownListing(u *upstream) map[[2]string]any {
	own := map[[2]string]any{}
	for _, raw := range u.tools {
		v, err := engine.DecodeJSON(raw)
		if err != nil {
			continue
		}
		if def, err := engine.ToolFromValue(v); err == nil {
			if p.gateway {
				def.Name = engine.ToolRef{Server: u.name, Tool: def.Name}.String()
			}
			own[[2]string{def.Name, def.Digest}] = v
		}
	}
	return own
}

// asListed is the object the client is shown for a tool whose pinned
// part (name, description, input schema) matches: the one bailiff was
// shown itself, so that what the digest leaves out (annotations such as
// readOnlyHint, a title, an output schema, _meta) cannot differ either.
// Without one of its own it is the pinned part alone.
func asListed(own map[[2]string]any, t any, def engine.ToolDef) any {
	if v, ok := own[[2]string{def.Name, def.Digest}]; ok {
		return v
	}
	m, _ := t.(map[string]any)
	out := map[string]any{}
	for _, k := range []string{"name", "description", "inputSchema"} {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// screen keeps the tools of one server's list the client may see: those
// the policy does not deny outright whose definition is the one pinned.
// It returns them, and the definitions withheld that the session's last
// list does not already hold (to record). Called with p.mu held.
func (p *Proxy) screen(u *upstream, tools []any) (kept []any, unseen []engine.ToolDef) {
	kept = []any{}
	own := p.ownListing(u)
	known := map[string]string{}
	for _, d := range p.defs {
		known[d.Name] = d.Digest
	}
	for _, t := range tools {
		def, err := engine.ToolFromValue(t)
		if err != nil {
			p.logf("withheld a tool of %s the client would have seen: it cannot be read: %v", u.name, err)
			continue
		}
		if p.opt.Policy.Hidden(engine.ToolRef{Server: u.name, Tool: def.Name}, p.opt.Principal) {
			continue
		}
		if p.gateway {
			def.Name = engine.ToolRef{Server: u.name, Tool: def.Name}.String()
		}
		pin, pinned := p.sess.State().Pinned(def.Name)
		if pinned && pin != "" && pin == def.Digest {
			kept = append(kept, asListed(own, t, def))
			continue
		}
		if pinned {
			p.logf("withheld tool %q from the client: its definition (%s) is not the one pinned (%s)", def.Name, short(def.Digest), short(pin))
		} else {
			p.logf("withheld tool %q from the client: it was not listed when the session started", def.Name)
		}
		if d, ok := known[def.Name]; !ok || d != def.Digest {
			unseen = append(unseen, def)
			known[def.Name] = def.Digest
		}
	}
	return kept, unseen
}

// recordSeen writes a tools record for definitions the client was shown
// that the proxy's own listing did not return: the session's last list
// with these in place of (or beside) the tools of the same name. The pins
// stay, so a call to such a tool is denied by pinning — "changed its
// definition" for a pinned tool, with the rug pull's approval path to
// accept it; "not listed" for a new one — and verify recomputes exactly
// that. Called with p.mu held.
func (p *Proxy) recordSeen(seen []engine.ToolDef) {
	merged := make([]engine.ToolDef, 0, len(p.defs)+len(seen))
	at := map[string]int{}
	for _, d := range p.defs {
		at[d.Name] = len(merged)
		merged = append(merged, d)
	}
	for _, d := range seen {
		if i, ok := at[d.Name]; ok {
			merged[i] = d
			continue
		}
		at[d.Name] = len(merged)
		merged = append(merged, d)
	}
	if err := p.step(audit.Event{Tools: &audit.ToolsBody{Tools: merged}}); err != nil {
		// The tools stay withheld; only the record of why is missing.
		p.logf("cannot write the audit log: %v", err)
		return
	}
	p.defs = merged
}

// unreadable fails closed on a tools/list answer the proxy cannot read.
func (p *Proxy) unreadable(id jsonrpc.ID, err error) *jsonrpc.Response {
	p.logf("the server's tools/list answer cannot be read (the client gets an error): %v", err)
	return listError(id, fmt.Errorf("the server's tools/list answer cannot be read: %v", err))
}

func listError(id jsonrpc.ID, err error) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "bailiff: " + err.Error()}}
}

// short abbreviates a digest for a message.
func short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	if d == "" {
		return "unknown"
	}
	return d
}
