package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"bailiff/audit"
	"bailiff/engine"
)

// listTools asks a server for its whole tool list, page by page, and
// returns the tools as pinned (named "<server>.<tool>" in a gateway) and
// as listed.
func (p *Proxy) listTools(ctx context.Context, u *upstream) ([]engine.ToolDef, []json.RawMessage, error) {
	var defs []engine.ToolDef
	var raws []json.RawMessage
	params := p.withOwnMeta(u, map[string]any{})
	for page := 0; page < 100; page++ {
		r, err := p.request(ctx, u, "tools/list", params, 30*time.Second)
		if err != nil {
			return nil, nil, err
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
			ResultType *string           `json:"resultType"`
		}
		if err := json.Unmarshal(r.Result, &res); err != nil {
			return nil, nil, fmt.Errorf("tools/list result: %v", err)
		}
		if res.ResultType != nil && *res.ResultType != "complete" {
			return nil, nil, fmt.Errorf("tools/list result is not complete (resultType %q)", *res.ResultType)
		}
		for _, t := range res.Tools {
			def, err := engine.ParseTool(t)
			if err != nil {
				// A tool that cannot be pinned cannot be called.
				p.logf("%s listed a tool that cannot be read (never callable): %v", u.name, err)
				continue
			}
			if p.gateway {
				def.Name = engine.ToolRef{Server: u.name, Tool: def.Name}.String()
			}
			defs = append(defs, def)
			raws = append(raws, t)
		}
		if res.NextCursor == "" {
			return defs, raws, nil
		}
		params = p.withOwnMeta(u, map[string]any{"cursor": res.NextCursor})
	}
	return nil, nil, errors.New("tools/list paginates without end")
}

// pin lists and pins the server's tools and writes the session record.
func (p *Proxy) pin(ctx context.Context) {
	p.pinOnce.Do(func() {
		defer close(p.pinned)
		var defs []engine.ToolDef
		for _, u := range p.ups {
			if p.gateway {
				// One broken (or hostile) server of several loses its own
				// tools, not everyone's: none of its tools is pinned, so
				// every call to it is denied by pinning.
				if err := p.initialize(ctx, u); err != nil {
					p.dropServer(u, fmt.Errorf("cannot initialize %s: %v", u.name, err))
					continue
				}
			}
			d, raws, err := p.listTools(ctx, u)
			if err != nil && p.gateway {
				p.dropServer(u, fmt.Errorf("cannot list the tools of %s: %v", u.name, err))
				continue
			}
			if err != nil {
				p.pinErr = fmt.Errorf("cannot list the tools of %s: %v", u.name, err)
				p.logf("%v: every call will be denied", p.pinErr)
				return
			}
			p.mu.Lock()
			u.tools = raws
			p.mu.Unlock()
			defs = append(defs, d...)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		body := &audit.SessionBody{Server: p.opt.Server, Principal: p.opt.Principal, Tools: defs, Approvers: p.opt.ApproverKeys, Replica: p.opt.Replica}
		p.drv = &audit.Driver{Config: audit.Config{Policy: p.opt.Policy, Log: p.opt.Log, Ledger: p.opt.Ledger}, Observer: &p.obs}
		if err := p.step(audit.Event{Start: &audit.StartStep{ID: p.opt.Session, Body: body}}); err != nil {
			p.pinErr = fmt.Errorf("cannot write the audit log: %v", err)
			p.logf("%v: every call will be denied", p.pinErr)
			return
		}
		p.sess = p.drv.Session(p.opt.Session)
		p.defs = defs
		p.flushEarly()
	})
}

// dropServer leaves a gateway's server out of the session: it is never
// listed again, and no tool of it is pinned.
func (p *Proxy) dropServer(u *upstream, err error) {
	p.logf("%v: its tools are not served, and every call to it is denied", err)
	p.mu.Lock()
	u.dropped = true
	p.mu.Unlock()
}

// relist re-pins after a server's list_changed: new tools become
// callable, changed ones stay denied.
func (p *Proxy) relist(ctx context.Context, u *upstream) {
	if !p.started(ctx) {
		return
	}
	p.mu.Lock()
	dropped := u.dropped
	p.mu.Unlock()
	if dropped {
		return
	}
	defs, raws, err := p.listTools(ctx, u)
	if err != nil {
		p.logf("cannot re-list the tools of %s after list_changed: %v", u.name, err)
		return
	}
	p.mu.Lock()
	u.tools = raws
	// The record holds the session's whole list: every server's tools.
	var all []engine.ToolDef
	for _, o := range p.ups {
		if o == u {
			all = append(all, defs...)
			continue
		}
		for _, t := range o.tools {
			if def, err := engine.ParseTool(t); err == nil {
				if p.gateway {
					def.Name = engine.ToolRef{Server: o.name, Tool: def.Name}.String()
				}
				all = append(all, def)
			}
		}
	}
	err = p.step(audit.Event{Tools: &audit.ToolsBody{Tools: all, Repin: true}})
	if err == nil {
		p.defs = all
	}
	p.mu.Unlock()
	if err != nil {
		p.logf("cannot write the audit log: %v", err)
		return
	}
	if p.gateway {
		n, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
		if err := p.down.sendRaw(n); err != nil {
			p.logf("cannot write to the client: %v", err)
		}
	}
}

// started waits for the session to be pinned; false if it never will be.
// It waits on the pin alone, which is bounded by its own requests'
// timeouts: whoever needs the pin has started it (startPin), so there is
// no notification to wait for.
func (p *Proxy) started(ctx context.Context) bool {
	select {
	case <-p.pinned:
		return p.pinErr == nil
	case <-ctx.Done():
		return false
	}
}
