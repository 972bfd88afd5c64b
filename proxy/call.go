package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"bailiff/chain"
	"bailiff/engine"
	"bailiff/internal/records"
)

// callParams reads tools/call params exactly: case-sensitive keys, no key
// twice (at any depth), a string name, an object of arguments.
func callParams(raw json.RawMessage) (name string, args map[string]any, meta any, err error) {
	v, err := engine.DecodeJSON(raw)
	if err != nil {
		return "", nil, nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "", nil, nil, errors.New("params must be an object")
	}
	name, ok = m["name"].(string)
	if !ok || name == "" {
		return "", nil, nil, errors.New(`params need a string "name"`)
	}
	switch a := m["arguments"].(type) {
	case nil:
		args = map[string]any{}
	case map[string]any:
		args = a
	default:
		return "", nil, nil, errors.New(`"arguments" must be an object`)
	}
	return name, args, m["_meta"], nil
}

// call decides one tools/call, records it, and forwards, refuses or asks.
func (p *Proxy) call(ctx context.Context, req *jsonrpc.Request) {
	name, args, meta, err := callParams(req.Params)
	if err != nil {
		p.malformed(req.ID, req.Params, "invalid tools/call params: "+err.Error(), jsonrpc.CodeInvalidParams)
		return
	}
	if !p.started(ctx) {
		reason := "the session has not started: the server's tools were never pinned"
		if p.pinErr != nil {
			reason = p.pinErr.Error()
		}
		// No session record to decide it under: it is logged as a request
		// that never became a call.
		p.malformed(req.ID, req.Params, "refused before the session started: "+reason, 0)
		p.toClient(refusal(req.ID, "bailiff denied this call: "+reason))
		return
	}
	written, removed := engine.Redact(args, p.opt.Policy.Redact())
	digest := engine.ArgsDigest(args)
	if len(removed) > 0 {
		digest = engine.ArgsHMAC(p.opt.Secret, args)
	}

	u, server, tool := p.route(name)
	p.mu.Lock()
	p.calls++
	c := &engine.Call{ID: "c" + strconv.Itoa(p.calls), Server: server, Tool: tool, Args: args, Digest: digest}
	p.collectGrants()
	now := p.opt.Now()
	d := engine.Decide(p.opt.Policy, p.state, c, now)
	body := &chain.CallBody{Call: c.ID, Tool: tool, Args: written, Digest: digest, Decision: records.FromDecision(d)}
	if p.gateway {
		body.Server = server
	}
	for _, r := range removed {
		body.Redacted = append(body.Redacted, r.String())
	}
	// The decision is on disk before anything is forwarded; a log that
	// cannot be written forwards nothing.
	if _, err := p.opt.Log.Append(now, p.opt.Session, chain.KindCall, body); err != nil {
		p.mu.Unlock()
		p.logf("cannot write the audit log: %v", err)
		p.toClient(refusal(req.ID, "bailiff denied this call: the audit log cannot be written"))
		return
	}
	if d.Verdict != engine.Ask {
		p.state.Apply(p.opt.Policy, c, d)
	}
	canElicit := p.canElicit
	p.mu.Unlock()

	switch d.Verdict {
	case engine.Allow:
		p.forward(ctx, u, req.ID, c, meta)
	case engine.Deny:
		text := describe(d)
		if d.Check == engine.CheckPinning {
			text += p.askRepin(c)
		}
		p.toClient(refusal(req.ID, text))
	case engine.Ask:
		if !canElicit {
			p.askLater(req.ID, c, written, d)
			return
		}
		d = p.elicit(ctx, c, d)
		if d.Verdict == engine.Allow {
			p.forward(ctx, u, req.ID, c, meta)
			return
		}
		p.toClient(refusal(req.ID, describe(d)))
	}
}

// forward sends the call upstream, re-encoded from the checked arguments,
// records what comes back, and answers the client.
// route finds the server a tool name goes to: the only one, or in a
// gateway the one named before the first dot (nil when there is none).
func (p *Proxy) route(name string) (u *upstream, server, tool string) {
	if !p.gateway {
		return p.ups[0], p.opt.Server, name
	}
	server, tool, ok := strings.Cut(name, ".")
	if !ok {
		return nil, "", name
	}
	return p.byName[server], server, tool
}

func (p *Proxy) forward(ctx context.Context, u *upstream, id jsonrpc.ID, c *engine.Call, meta any) {
	params := map[string]any{"name": c.Tool, "arguments": c.Args}
	if meta != nil {
		params["_meta"] = meta
	}
	raw := engine.CanonicalJSON(params)
	ch := make(chan *jsonrpc.Response, 1)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.failed(id, c, "the server is gone")
		return
	}
	u.inflight[key(id)] = ch
	p.mu.Unlock()
	if err := u.wire.send(&jsonrpc.Request{ID: id, Method: "tools/call", Params: raw}); err != nil {
		p.mu.Lock()
		delete(u.inflight, key(id))
		p.mu.Unlock()
		p.failed(id, c, "cannot write to the server: "+err.Error())
		return
	}
	t := time.NewTimer(p.opt.CallTimeout)
	defer t.Stop()
	select {
	case r, ok := <-ch:
		if !ok {
			p.failed(id, c, "the server exited before answering")
			return
		}
		p.result(id, c, r)
	case <-t.C:
		p.mu.Lock()
		delete(u.inflight, key(id))
		p.mu.Unlock()
		p.failed(id, c, fmt.Sprintf("the server did not answer within %s", p.opt.CallTimeout))
	case <-ctx.Done():
		p.failed(id, c, "the session closed before the server answered")
	}
}

// result records what the server answered and passes it on unchanged.
func (p *Proxy) result(id jsonrpc.ID, c *engine.Call, r *jsonrpc.Response) {
	if r.Error != nil {
		// The error's message reaches the client as surely as a result.
		evidence := errorOutput(r.Error)
		text, _ := engine.OutputFromJSON(evidence)
		p.record(c, chain.StatusFailed, evidence, text, true)
		p.toClient(r)
		return
	}
	v, err := engine.DecodeJSON(r.Result)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		p.failed(id, c, "the server's result is not a JSON object")
		return
	}
	isError, _ := m["isError"].(bool)
	evidence := engine.OutputJSON("", m["content"], m["structuredContent"])
	text := engine.OutputText("", m["content"], m["structuredContent"])
	status := chain.StatusOK
	if isError {
		status = chain.StatusError
	}
	p.record(c, status, evidence, text, isError)
	p.toClient(r)
}

// failed answers a call the server did not: a tool error, audited, which
// consumes no budget.
func (p *Proxy) failed(id jsonrpc.ID, c *engine.Call, why string) {
	p.record(c, chain.StatusFailed, nil, "", true)
	p.toClient(refusal(id, "bailiff: the call failed upstream: "+why))
}

// record writes a result record and feeds the output to taint tracking.
func (p *Proxy) record(c *engine.Call, status string, evidence []byte, text string, failed bool) {
	var digest string
	if evidence != nil {
		var err error
		if digest, err = p.opt.Evidence.Put(evidence, p.opt.EvidenceSync); err != nil {
			// The digest is still recorded: verify then reports the
			// decisions that needed this output as unevaluable.
			p.logf("cannot store evidence: %v", err)
			digest = chain.Digest(evidence)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	seq := int(p.opt.Log.Next())
	body := &chain.ResultBody{Call: c.ID, Server: c.Server, Tool: c.Tool, Status: status, Content: digest, Size: int64(len(evidence))}
	if _, err := p.opt.Log.Append(p.opt.Now(), p.opt.Session, chain.KindResult, body); err != nil {
		p.logf("cannot write the audit log: %v", err)
	}
	if failed {
		p.state.Failed(c.ID)
	}
	if evidence != nil {
		p.state.AddOutput(p.opt.Policy, engine.Source{Pos: seq, Server: c.Server, Tool: c.Tool}, text)
	}
}

// elicit asks the human through the client. The answer is bound to this
// call by the request id the client must answer, which only the proxy
// knows; a client cannot answer a question it was not asked.
func (p *Proxy) elicit(ctx context.Context, c *engine.Call, asked engine.Decision) engine.Decision {
	args, _ := json.Marshal(c.Args)
	msg := fmt.Sprintf("bailiff: the agent wants to call %q on %s with %s.\n%s\nApprove this one call?", c.Tool, c.Server, args, asked.Reason)
	params := map[string]any{
		"message": msg,
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"approve": map[string]any{"type": "boolean", "title": "Approve", "description": "Allow this call once"},
			},
			"required": []string{"approve"},
		},
	}
	approve := false
	r, err := p.request(ctx, nil, "elicitation/create", params, p.opt.AskTimeout)
	if err != nil {
		p.logf("elicitation for call %s failed: %v", c.ID, err)
	} else {
		var res struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		}
		if json.Unmarshal(r.Result, &res) == nil {
			yes, _ := res.Content["approve"].(bool)
			approve = res.Action == "accept" && yes
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opt.Now()
	g := engine.Grant{ID: "elicit-" + c.ID, Server: c.Server, Tool: c.Tool, Digest: c.Digest,
		Approver: "elicitation", Approve: approve, Expires: now.Add(p.opt.Policy.ApprovalTTL())}
	d := engine.Answer(p.opt.Policy, p.state, c, asked, g, now)
	rd := records.FromDecision(d)
	body := &chain.GrantBody{Grant: g.ID, Call: c.ID, Tool: g.Tool, Digest: g.Digest, Approver: g.Approver,
		Answer: records.Answer(approve), Expires: g.Expires.UTC().Format(chain.TimeFormat), Decision: &rd}
	if p.gateway {
		body.Server = c.Server
	}
	if _, err := p.opt.Log.Append(now, p.opt.Session, chain.KindGrant, body); err != nil {
		p.logf("cannot write the audit log: %v", err)
		return engine.Decision{Verdict: engine.Deny, Check: engine.CheckApproval, Rule: asked.Rule, Reason: "the audit log cannot be written"}
	}
	p.state.Apply(p.opt.Policy, c, d)
	return d
}

// askLater refuses an ask the client cannot put to a human, and leaves a
// pending approval that `bailiff approve` can grant for a retry.
func (p *Proxy) askLater(id jsonrpc.ID, c *engine.Call, written map[string]any, d engine.Decision) {
	text := "bailiff: this call needs a human's approval and the client cannot ask for it (no elicitation support). " + d.Reason
	if p.opt.Approvals != nil {
		aid := p.opt.Session + "-" + c.ID
		err := p.opt.Approvals.Ask(Pending{ID: aid, Session: p.opt.Session, Server: c.Server, Call: c.ID, Tool: c.Tool,
			Args: written, Digest: c.Digest, Reason: d.Reason, Asked: p.opt.Now().UTC().Format(chain.TimeFormat)})
		if err != nil {
			p.logf("cannot write the pending approval: %v", err)
		} else {
			p.mu.Lock()
			p.waiting[aid] = c
			p.mu.Unlock()
			text += fmt.Sprintf(" To allow it, run: bailiff approve %s --audit <log>; then retry the same call.", aid)
		}
	}
	p.toClient(refusal(id, text))
}

// askRepin leaves a pending approval for a tool whose definition changed
// since it was pinned, and says how to accept it.
func (p *Proxy) askRepin(c *engine.Call) string {
	if p.opt.Approvals == nil {
		return ""
	}
	name := c.Tool
	if p.gateway {
		name = c.Server + "." + c.Tool
	}
	p.mu.Lock()
	digest, changed := p.state.Changed(name)
	p.mu.Unlock()
	if !changed {
		return ""
	}
	aid := p.opt.Session + "-definition-" + strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' {
			return '_'
		}
		return r
	}, name) + "-" + strings.TrimPrefix(digest, "sha256:")[:12]
	p.mu.Lock()
	_, known := p.repins[aid]
	p.mu.Unlock()
	if !known {
		err := p.opt.Approvals.Ask(Pending{ID: aid, Kind: "definition", Session: p.opt.Session, Server: c.Server, Tool: c.Tool,
			Digest: digest, Reason: "the tool's definition changed since the session pinned it",
			Asked: p.opt.Now().UTC().Format(chain.TimeFormat)})
		if err != nil {
			p.logf("cannot write the pending approval: %v", err)
			return ""
		}
		p.mu.Lock()
		p.repins[aid] = engine.ToolDef{Name: name, Digest: digest}
		p.mu.Unlock()
	}
	return fmt.Sprintf(" To accept the new definition, run: bailiff approve %s --audit <log>.", aid)
}

// collectGrants turns answers given with `bailiff approve` into grant
// records, for a later identical call, and accepted definitions into
// tools records. Called with p.mu held.
func (p *Proxy) collectGrants() {
	if p.opt.Approvals == nil {
		return
	}
	for aid, def := range p.repins {
		a, ok := p.opt.Approvals.Answer(aid)
		if !ok {
			continue
		}
		delete(p.repins, aid)
		p.opt.Approvals.Done(aid)
		if a.Answer != "approve" || a.Approver == p.opt.Principal.Subject {
			p.logf("the new definition of %s was not accepted (answer %s by %s)", def.Name, a.Answer, a.Approver)
			continue
		}
		body := &chain.ToolsBody{Tools: records.Tools(p.defs), Accept: records.Tools([]engine.ToolDef{def}), AcceptedBy: a.Approver}
		if _, err := p.opt.Log.Append(p.opt.Now(), p.opt.Session, chain.KindTools, body); err != nil {
			p.logf("cannot write the audit log: %v", err)
			continue
		}
		p.state.ListTools(p.defs)
		p.state.Accept([]engine.ToolDef{def})
	}
	for aid, c := range p.waiting {
		a, ok := p.opt.Approvals.Answer(aid)
		if !ok {
			continue
		}
		delete(p.waiting, aid)
		now := p.opt.Now()
		g := engine.Grant{ID: aid, Server: c.Server, Tool: c.Tool, Digest: c.Digest, Approver: a.Approver,
			Approve: a.Answer == "approve", Expires: now.Add(p.opt.Policy.ApprovalTTL())}
		body := &chain.GrantBody{Grant: g.ID, Call: c.ID, Tool: g.Tool, Digest: g.Digest, Approver: g.Approver,
			Answer: records.Answer(g.Approve), Expires: g.Expires.UTC().Format(chain.TimeFormat)}
		if p.gateway {
			body.Server = c.Server
		}
		if _, err := p.opt.Log.Append(now, p.opt.Session, chain.KindGrant, body); err != nil {
			p.logf("cannot write the audit log: %v", err)
			continue
		}
		p.state.AddGrant(g)
		p.opt.Approvals.Done(aid)
	}
}
