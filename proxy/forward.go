package proxy

import (
	"context"
	"fmt"
	"time"

	"bailiff/audit"
	"bailiff/engine"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// forward sends the call upstream, re-encoded from the checked arguments,
// records what comes back, and answers the client. It returns how long
// the upstream took, for what bailiff itself added.
func (p *Proxy) forward(ctx context.Context, u *upstream, id jsonrpc.ID, c *engine.Call, meta any) (upstream time.Duration) {
	params := map[string]any{"name": c.Tool, "arguments": c.Args}
	if p.gateway {
		meta = p.gatewayCallMeta(u, meta)
	}
	parent, state, endSpan := spanOf(ctx).Upstream(c.Server)
	answered := false
	defer func() { endSpan(answered) }()
	meta = tracedMeta(meta, parent, state)
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
	sent := time.Now()
	defer func() {
		if upstream == 0 {
			upstream = time.Since(sent)
		}
		p.telemetry().Upstream(c.Server, answered, upstream)
	}()
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
		// The round trip ends here: recording and relaying the answer
		// is bailiff's own time.
		answered, upstream = true, time.Since(sent)
		p.result(id, c, r)
	case <-t.C:
		p.mu.Lock()
		delete(u.inflight, key(id))
		p.mu.Unlock()
		p.failed(id, c, fmt.Sprintf("the server did not answer within %s", p.opt.CallTimeout))
	case <-ctx.Done():
		p.failed(id, c, "the session closed before the server answered")
	}
	return // upstream, set on the way out
}

// result records what the server answered and passes it on unchanged.
func (p *Proxy) result(id jsonrpc.ID, c *engine.Call, r *jsonrpc.Response) {
	if r.Error != nil {
		// The error's message reaches the client as surely as a result.
		evidence := errorOutput(r.Error)
		text, _ := engine.OutputFromJSON(evidence)
		p.record(c, audit.StatusFailed, evidence, text, true)
		p.toClient(r)
		return
	}
	v, err := engine.DecodeJSON(r.Result)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		p.failed(id, c, "the server's result is not a JSON object")
		return
	}
	// A result that is not complete (input_required: the server asks the
	// client for more before it answers) is no tool result: relayed, the
	// client would answer the server's question and retry outside what
	// was decided; recorded as one, verify would count a call as done
	// that never was. Until bailiff relays multi-round-trip asks, the
	// call fails, closed.
	if rt, ok := resultType(m); !ok || rt != "complete" {
		why := "the server's result has a resultType that is not a string"
		if ok {
			why = fmt.Sprintf("the server asked for more input (resultType %q), which bailiff does not relay yet", rt)
		}
		p.failed(id, c, why)
		return
	}
	// A client reads inputRequests whatever resultType says: relayed, a
	// server's own requests (sampling, elicitation, roots) would be run
	// untracked, and its retry would repeat a call decided once.
	if k := inputKey(m); k != "" {
		p.failed(id, c, fmt.Sprintf("the server's result carries %s: it asks for more input, which bailiff does not relay", k))
		return
	}
	isError, _ := m["isError"].(bool)
	evidence := engine.OutputJSON("", m["content"], m["structuredContent"])
	text := engine.OutputText("", m["content"], m["structuredContent"])
	status := audit.StatusOK
	if isError {
		status = audit.StatusError
	}
	p.record(c, status, evidence, text, isError)
	p.toClient(r)
}

// failed answers a call the server did not: a tool error, audited, which
// consumes no budget.
func (p *Proxy) failed(id jsonrpc.ID, c *engine.Call, why string) {
	p.record(c, audit.StatusFailed, nil, "", true)
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
			digest = audit.ContentDigest(evidence)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	body := &audit.ResultBody{Call: c.ID, ToolRef: c.ToolRef, Status: status, Content: digest, Size: int64(len(evidence))}
	var out *audit.Output
	if evidence != nil {
		out = &audit.Output{Text: text}
	}
	if err := p.step(audit.Event{Result: &audit.ResultStep{Body: body, Out: out}}); err != nil {
		p.logf("cannot write the audit log: %v", err)
	}
}
