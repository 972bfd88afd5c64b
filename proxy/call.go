package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"bailiff/audit"
	"bailiff/engine"
	"bailiff/internal/jsontext"
)

// callParams reads tools/call params exactly: valid text (no byte the
// decoder would make U+FFFD), case-sensitive keys, no key twice (at any
// depth), a string name, an object of arguments.
func callParams(raw json.RawMessage) (name string, args map[string]any, meta any, err error) {
	if err := jsontext.CheckText(raw); err != nil {
		return "", nil, nil, err
	}
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
	name, args, meta, resolved, ok := p.admit(ctx, req)
	if !ok {
		return
	}
	start := time.Now()
	ctx, span := p.startSpan(ctx, req.ID, name, meta)
	defer span.End()
	u, ref := p.route(name)
	c := &engine.Call{ToolRef: ref, Args: args}
	// A panic from here on is a bug, but one call's bug: that call is
	// refused, the log says why, and the gateway goes on serving.
	var recorded bool
	defer func() {
		if r := recover(); r != nil {
			p.internalError(req, c, recorded, r)
		}
	}()
	// A retry of an ask put to a stateless client as input_required
	// settles that ask, if its state is authentic and bound to this very
	// call; otherwise it is a new call, and its answer counts for
	// nothing (badState).
	var badState error
	listening, httpAsk := p.httpClient(req.ID)
	if state, present, responses := retryParams(req.Params); present && (p.isStateless() || listening) {
		p.digest(c)
		pend, err := p.takeState(state, c)
		if err == nil {
			c, recorded = pend.call, true
			d := p.settle(c, pend.asked, approved(responses))
			if d.Verdict == engine.Allow {
				p.forward(ctx, u, req.ID, c, meta)
				return
			}
			p.toClient(refusal(req.ID, describe(d)))
			return
		}
		p.logf("a retry of %s carried a requestState that approves nothing: %v", name, err)
		badState = err
	}
	d, written, canElicit, err := p.decide(c, resolved, httpAsk, span.TraceID())
	if errors.Is(err, audit.ErrUnsaved) {
		// Recorded, but unseen by the other gateways: not forwarded,
		// and closed as failed, so the log gives back what it spent.
		p.told(span, c, d)
		p.unsaved(req.ID, c, d, err)
		return
	}
	if errors.Is(err, audit.ErrLedger) {
		// Nothing was decided: a decision on counts another gateway may
		// have changed would be a guess. The refusal is recorded as one
		// the engine did not make.
		p.logf("call %s refused: %v", c.ID, err)
		p.malformed(req.ID, req.Params, "refused: "+err.Error(), 0)
		// The agent is told what, not where: the details name the
		// state database, which is the operator's.
		p.toClient(refusal(req.ID, "bailiff denied this call: "+audit.ErrLedger.Error()+" (the gateway's stderr says why)"))
		return
	}
	if err != nil {
		p.logf("cannot write the audit log: %v", err)
		p.toClient(refusal(req.ID, "bailiff denied this call: the audit log cannot be written"))
		return
	}
	recorded = true
	p.told(span, c, d)
	switch d.Verdict {
	case engine.Allow:
		if err := p.spendGrant(c, d); err != nil {
			p.toClient(refusal(req.ID, "bailiff denied this call: its approval cannot be used: "+err.Error()))
			return
		}
		up := p.forward(ctx, u, req.ID, c, meta)
		p.telemetry().Added(c.Server, string(d.Verdict), time.Since(start)-up)
	case engine.Deny:
		p.denied(req.ID, c, d, start)
	case engine.Ask:
		p.ask(ctx, u, req, c, meta, written, d, canElicit, listening, badState)
	}
}

// denied answers a denied call; start is when its request arrived.
func (p *Proxy) denied(id jsonrpc.ID, c *engine.Call, d engine.Decision, start time.Time) {
	text := describe(d)
	if d.Check == engine.CheckPinning {
		text += p.askRepin(c)
	}
	p.telemetry().Added(c.Server, string(d.Verdict), time.Since(start))
	p.toClient(refusal(id, text))
}

// admit reads a tools/call's parameters and resolves its confined paths,
// once the session has started; a call it cannot admit is refused and
// logged as a request that never became a call (ok false).
func (p *Proxy) admit(ctx context.Context, req *jsonrpc.Request) (name string, args map[string]any, meta any, resolved map[string]string, ok bool) {
	var err error
	name, args, meta, err = callParams(req.Params)
	if err != nil {
		p.malformed(req.ID, req.Params, "invalid tools/call params: "+err.Error(), jsonrpc.CodeInvalidParams)
		return "", nil, nil, nil, false
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
		return "", nil, nil, nil, false
	}
	args, resolved, err = p.resolve(name, args)
	if err != nil {
		// Not decided: what the server would open is not known.
		p.malformed(req.ID, req.Params, "refused: "+err.Error(), 0)
		p.toClient(refusal(req.ID, "bailiff denied this call: "+err.Error()))
		return "", nil, nil, nil, false
	}
	return name, args, meta, resolved, true
}

// ask puts asked call c to a human: in band when the client can elicit (or
// answer an input_required result), else as a pending approval for a
// retry. badState is a retry's requestState that approved nothing.
func (p *Proxy) ask(ctx context.Context, u *upstream, req *jsonrpc.Request, c *engine.Call, meta any, written map[string]any, d engine.Decision, canElicit, listening bool, badState error) {
	if !canElicit {
		p.askLater(req.ID, c, written, d)
		return
	}
	if badState != nil {
		// Recorded as the human's decline: the client answered a
		// question it was not asked (or no longer may answer).
		d = p.settle(c, d, false)
		p.toClient(refusal(req.ID, fmt.Sprintf("bailiff denied this call: the %v. %s", badState, describe(d))))
		return
	}
	if p.isStateless() || listening {
		// An HTTP client is asked in the call's result too: the SDK
		// server turns it into elicitation/create for a client of an
		// older revision (listen.go).
		p.askInBand(req.ID, c, d)
		return
	}
	d = p.elicit(ctx, c, d)
	if d.Verdict == engine.Allow {
		p.forward(ctx, u, req.ID, c, meta)
		return
	}
	p.toClient(refusal(req.ID, describe(d)))
}

// decide decides a call and writes its record, which is on disk (synced,
// with --durability sync) before anything is forwarded: a log that cannot
// be written forwards nothing. The lock is released on the way out, panic
// or not, so a recovered panic leaves the session usable.
//
// httpAsk says the HTTP client of this one request can put an ask to a
// human (the pump's session, shared by every HTTP client, cannot say).
func (p *Proxy) decide(c *engine.Call, resolved map[string]string, httpAsk bool, trace string) (d engine.Decision, written map[string]any, canElicit bool, err error) {
	written, removed := p.digest(c)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	c.ID = "c" + strconv.Itoa(p.calls)
	p.collectGrants()
	body := &audit.CallBody{Call: c.ID, Tool: c.Tool, Args: written, Digest: c.Digest, Trace: trace}
	if p.gateway {
		body.Server = c.Server
	}
	// Whether an ask goes to the human in band: verify accepts an
	// unsigned elicitation grant only for a call marked so (the session
	// marks only a call it asks).
	canElicit = p.canElicit || httpAsk
	body.Elicit = canElicit
	for _, r := range removed {
		body.Redacted = append(body.Redacted, r.String())
	}
	body.Resolved = recordedResolved(resolved, written)
	p.obs.decided = engine.Decision{}
	err = p.step(audit.Event{Call: &audit.CallStep{Call: c, Body: body}})
	d = p.obs.decided
	if err != nil {
		return d, nil, false, err // the caller denies: nothing is forwarded unrecorded
	}
	return d, written, canElicit, nil
}

// askable is a client stream whose requests come from many clients, each
// saying for itself whether it can put a question to a human.
type askable interface {
	canAsk(id jsonrpc.ID) bool
}

// httpClient reports whether the client is gateway --listen's (listening)
// and whether the one whose request id is can be asked in band.
func (p *Proxy) httpClient(id jsonrpc.ID) (listening, canAsk bool) {
	a, ok := p.down.(askable)
	if !ok {
		return false, false
	}
	return true, a.canAsk(id)
}

// digest sets the digest grants bind c to: keyed when the policy redacts
// any of its arguments, so a redacted value cannot be confirmed by
// guessing. It returns the arguments as recorded and what was removed.
func (p *Proxy) digest(c *engine.Call) (written map[string]any, removed []engine.Path) {
	written, removed = engine.Redact(c.Args, p.opt.Policy.Redact())
	c.Digest = engine.ArgsDigest(c.Args)
	if len(removed) > 0 {
		c.Digest = engine.ArgsHMAC(p.opt.Secret, c.Args)
	}
	return written, removed
}

func (p *Proxy) isStateless() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stateless
}

// internalError refuses a call whose handling panicked. Before its call
// record was written, a malformed record says an internal error refused
// it; after, a failed result closes it, so that verify, like the
// gateway, counts it as never completed.
func (p *Proxy) internalError(req *jsonrpc.Request, c *engine.Call, recorded bool, r any) {
	why := fmt.Sprintf("internal error: %v", r)
	p.logf("call %s (%s) refused by an %s", c.ID, c.Tool, why)
	func() {
		defer func() {
			if r := recover(); r != nil {
				p.logf("cannot record the internal error: %v", r)
			}
		}()
		if recorded {
			p.record(c, audit.StatusFailed, nil, "", true)
			return
		}
		p.malformed(req.ID, req.Params, "refused by an "+why, 0)
	}()
	p.toClient(refusal(req.ID, "bailiff denied this call: "+why))
}

// route finds the server a tool name goes to: the only one, or in a
// gateway the one named before the first dot (nil when there is none).
func (p *Proxy) route(name string) (*upstream, engine.ToolRef) {
	if !p.gateway {
		return p.ups[0], engine.ToolRef{Server: p.opt.Server, Tool: name}
	}
	if p.opt.Unprefixed {
		return p.ups[0], engine.ToolRef{Server: p.ups[0].name, Tool: name}
	}
	ref, ok := engine.ParseToolRef(name)
	if !ok {
		return nil, ref
	}
	return p.byName[ref.Server], ref
}

// elicit asks the human through the client. The answer is bound to this
// call by the request id the client must answer, which only the proxy
// knows; a client cannot answer a question it was not asked.
func (p *Proxy) elicit(ctx context.Context, c *engine.Call, asked engine.Decision) engine.Decision {
	approve := false
	r, err := p.request(ctx, nil, "elicitation/create", approvalQuestion(c, asked), p.opt.AskTimeout)
	if err != nil {
		p.logf("elicitation for call %s failed: %v", c.ID, err)
	} else {
		var res struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		}
		if json.Unmarshal(r.Result, &res) == nil {
			var note string
			approve, note = elicitAnswer(res.Action, res.Content)
			if !approve {
				// The record says "declined by elicitation" for every
				// answer that is no approval (the engine's words, which
				// verify recomputes); what the client sent is said here.
				p.logf("elicitation for call %s: %s: counted as declined", c.ID, note)
			}
		}
	}
	return p.settle(c, asked, approve)
}

// elicitAnswer reads a client's answer to an approval question: only
// accept with approve true approves. note says what any other answer was.
func elicitAnswer(action string, content map[string]any) (approve bool, note string) {
	yes, isBool := content["approve"].(bool)
	switch {
	case action == "accept" && yes:
		return true, "approved"
	case action == "accept" && isBool:
		return false, "the human answered approve: false"
	case action == "accept":
		return false, "accepted without approve: true (the client sent no approval)"
	case action == "decline":
		return false, "the human declined"
	case action == "cancel":
		return false, "the human cancelled the question"
	}
	return false, fmt.Sprintf("unknown action %q", action)
}

// refusal is the tool result of a call bailiff did not forward.
func refusal(id jsonrpc.ID, text string) *jsonrpc.Response {
	res, _ := json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": text}},
		"isError": true,
	})
	return &jsonrpc.Response{ID: id, Result: res}
}

func describe(d engine.Decision) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "bailiff denied this call (check %s", d.Check)
	if d.Rule != "" {
		fmt.Fprintf(&b, ", rule %s", d.Rule)
	}
	fmt.Fprintf(&b, "): %s", d.Reason)
	return b.String()
}
