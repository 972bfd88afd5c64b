package proxy

import (
	"errors"

	"bailiff/audit"
	"bailiff/engine"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// settle records the human's in-band answer to asked call c, given
// through elicitation/create or an input_required retry alike: an
// unsigned grant by "elicitation", carrying the final decision.
func (p *Proxy) settle(c *engine.Call, asked engine.Decision, approve bool) engine.Decision {
	d, err := p.settleStep(c, asked, approve)
	if errors.Is(err, audit.ErrUnsaved) {
		p.logf("call %s (%s) not forwarded: %v", c.ID, c.Tool, err)
		p.record(c, audit.StatusFailed, nil, "", true)
		d = engine.Decision{Verdict: engine.Deny, Check: engine.CheckApproval, Rule: asked.Rule,
			Reason: audit.ErrUnsaved.Error()}
	}
	return d
}

func (p *Proxy) settleStep(c *engine.Call, asked engine.Decision, approve bool) (engine.Decision, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opt.Now()
	g := engine.Grant{ID: "elicit-" + c.ID, ToolRef: c.ToolRef, Digest: c.Digest,
		Approver: "elicitation", Approve: approve, Expires: now.Add(p.opt.Policy.ApprovalTTL())}
	refuse := func(why string) engine.Decision {
		return engine.Decision{Verdict: engine.Deny, Check: engine.CheckApproval, Rule: asked.Rule, Reason: why}
	}
	body := &audit.GrantBody{Grant: g.ID, Call: c.ID, Tool: g.Tool, Digest: g.Digest, Approver: g.Approver,
		Answer: audit.Answer(approve), Expires: audit.FormatTime(g.Expires)}
	if p.gateway {
		body.Server = c.Server
	}
	// The gateway's answer claims to settle its call: the driver settles
	// it only if the call still waits for one.
	err := p.step(audit.Event{At: now, Grant: &audit.GrantStep{Call: c.ID, ID: g.ID, Approver: g.Approver, Approve: approve,
		Expires: g.Expires, Logged: true, Settled: true, Tool: g.ToolRef, Digest: g.Digest, Body: body}})
	var se *audit.StepError
	switch {
	case errors.As(err, &se):
		return refuse("the call is not one this session made"), nil
	case errors.Is(err, errAnswered):
		return refuse("the call was already answered"), nil
	case errors.Is(err, audit.ErrUnsaved):
		return engine.Decision{}, err
	case err != nil:
		p.logf("cannot write the audit log: %v", err)
		return refuse("the audit log cannot be written"), nil
	}
	return p.obs.decided, nil
}

// unsaved refuses call c, decided d and recorded, whose change to the
// shared tenant counters could not be saved: an allowed one is closed as
// failed (a refused or asked one spent nothing).
func (p *Proxy) unsaved(id jsonrpc.ID, c *engine.Call, d engine.Decision, err error) {
	p.logf("call %s (%s) not forwarded: %v", c.ID, c.Tool, err)
	if d.Verdict == engine.Allow {
		p.record(c, audit.StatusFailed, nil, "", true)
	}
	p.toClient(refusal(id, "bailiff denied this call: "+audit.ErrUnsaved.Error()+" (the gateway's stderr says why)"))
}
