package proxy

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"bailiff/audit"
	"bailiff/engine"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// askLater refuses an ask the client cannot put to a human, and leaves a
// pending approval that `bailiff approve` can grant for a retry.
func (p *Proxy) askLater(id jsonrpc.ID, c *engine.Call, written map[string]any, d engine.Decision) {
	text := "bailiff: this call needs a human's approval and the client cannot ask for it (no elicitation support). " + sentence(d.Reason)
	p.mu.Lock()
	why, wasRefused := p.refused[answerKey(c.Server, c.Tool, c.Digest)]
	delete(p.refused, answerKey(c.Server, c.Tool, c.Digest))
	p.mu.Unlock()
	if wasRefused {
		// Said to the one retrying, not only on the gateway's stderr: a
		// self-approval or a forged answer is not a mere new ask.
		text += " " + why + "."
	}
	switch {
	case p.opt.Approvals == nil:
	case len(p.opt.ApproverKeys) == 0:
		// An answer out of band counts only if signed by a key this
		// gateway trusts, and it trusts none: the ask is not recorded
		// (no one could answer it), and the refusal says why.
		text += " No approver key is trusted by this gateway, so no answer given out of band can approve it: restart it with an approver key (run's --approver-key, or approver_keys: in a gateway config), or use a client that can put the question to a human."
	default:
		aid := p.opt.Session + "-" + c.ID
		now := p.opt.Now()
		err := p.opt.Approvals.Ask(Pending{ID: aid, Session: p.opt.Session, Principal: p.opt.Principal.Subject, Server: c.Server, Call: c.ID, Tool: c.Tool,
			Args: written, Digest: c.Digest, Reason: d.Reason, Asked: audit.FormatTime(now)})
		if err != nil {
			p.logf("cannot write the pending approval: %v", err)
			text += " The ask could not be recorded for an approver (the gateway's state database failed), so it cannot be approved out of band now."
			break
		}
		p.mu.Lock()
		p.waiting[aid] = c
		p.asked(aid, now)
		p.mu.Unlock()
		text += fmt.Sprintf(" To allow it, run: %s; then retry the same call.", p.opt.Approvals.approveCommand(aid))
	}
	p.toClient(refusal(id, text))
}

// asked notes when an approval was asked: an answer signed before then
// was not given for this ask. Called with p.mu held.
func (p *Proxy) asked(aid string, at time.Time) {
	if p.askedAt == nil {
		p.askedAt = map[string]time.Time{}
	}
	p.askedAt[aid] = at
}

// askRepin leaves a pending approval for a tool whose definition changed
// since it was pinned, and says how to accept it.
func (p *Proxy) askRepin(c *engine.Call) string {
	if p.opt.Approvals == nil {
		return ""
	}
	name := c.In(p.opt.Server)
	p.mu.Lock()
	digest, changed := p.sess.State().Changed(name)
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
		now := p.opt.Now()
		err := p.opt.Approvals.Ask(Pending{ID: aid, Kind: "definition", Session: p.opt.Session, Principal: p.opt.Principal.Subject, Server: c.Server, Tool: c.Tool,
			Digest: digest, Reason: "the tool's definition changed since the session pinned it",
			Asked: audit.FormatTime(now)})
		if err != nil {
			p.logf("cannot write the pending approval: %v", err)
			return ""
		}
		p.mu.Lock()
		def := engine.ToolDef{Name: name, Digest: digest}
		for _, d := range p.defs {
			// The listed definition carries what its schema fixes, which
			// an accepted change pins as well.
			if d.Name == name && d.Digest == digest {
				def = d
			}
		}
		p.repins[aid] = def
		p.asked(aid, now)
		p.mu.Unlock()
	}
	return fmt.Sprintf(" To accept the new definition, run: %s.", p.opt.Approvals.approveCommand(aid))
}

// clockSkew is how far in the future an answer's signed time may be: the
// approver's clock and the gateway's may differ a little.
const clockSkew = time.Minute

// takeAnswer returns the answer to approval ap, if one was given and it is
// authentic: signed by a key the gateway trusts, not the principal's, over
// exactly this ask, after it was asked. An answer that fails is removed
// (the ask stays pending for a real approver) and reported on stderr, as
// is a state database that cannot be read: the ask stays unanswered.
// Called with p.mu held.
func (p *Proxy) takeAnswer(ap audit.Approval) (ans AnswerFile, approver string, ok bool) {
	ans, ok, err := p.opt.Approvals.Answer(ap.ID)
	if err != nil {
		p.logf("cannot read the answer to %s: %v", ap.ID, err)
	}
	if !ok {
		return ans, "", false
	}
	ap.Answer = ans.Answer
	name, err := audit.TrustedApprover(ap, ans.Signature, p.opt.ApproverKeys, p.opt.Principal.Subject)
	if err == nil {
		var signed time.Time
		signed, err = audit.ParseTime(ans.Signature.Time)
		switch {
		case err != nil:
			err = fmt.Errorf("signed time %q is not %s", ans.Signature.Time, audit.TimeFormat)
		case signed.Before(p.askedAt[ap.ID].Truncate(time.Second)):
			err = fmt.Errorf("it was signed at %s, before the ask", ans.Signature.Time)
		case signed.After(p.opt.Now().Add(clockSkew)):
			err = fmt.Errorf("it was signed at %s, in the future", ans.Signature.Time)
		}
	}
	if err != nil {
		p.logf("refused the answer to %s: %v", ap.ID, err)
		if err := p.opt.Approvals.Reject(ap.ID); err != nil {
			p.logf("cannot remove the refused answer to %s: %v", ap.ID, err)
		}
		if p.refused == nil {
			p.refused = map[string]string{}
		}
		p.refused[answerKey(ap.Server, ap.Tool, ap.Digest)] = fmt.Sprintf("The answer to %s was refused: %v", ap.ID, err)
		return ans, "", false
	}
	return ans, name, true
}

// answerKey names the call an answer was for, so a retry of it hears why
// the answer was refused.
func answerKey(server, tool, digest string) string { return server + "\x00" + tool + "\x00" + digest }

// collectGrants turns answers given with `bailiff approve` into grant
// records, for a later identical call, and accepted definitions into
// tools records. Called with p.mu held.
func (p *Proxy) collectGrants() {
	if p.opt.Approvals == nil {
		return
	}
	defer p.carryGrants()
	for aid, def := range p.repins {
		// A definition is named as the session pins it ("<server>.<tool>"
		// in a gateway), under the session's server: what verify sees.
		ap := audit.Approval{ID: aid, Kind: audit.ApproveDefinition, Session: p.opt.Session, ToolRef: engine.ToolRef{Server: p.opt.Server, Tool: def.Name}, Digest: def.Digest}
		a, approver, ok := p.takeAnswer(ap)
		if !ok {
			continue
		}
		delete(p.repins, aid)
		p.settled(aid, nil)
		if a.Answer != "approve" || !p.sess.State().MayAccept(approver) {
			p.logf("the new definition of %s was not accepted (declined by %s)", def.Name, approver)
			continue
		}
		sig := a.Signature
		body := &audit.ToolsBody{Tools: p.defs, Accept: []engine.ToolDef{def}, AcceptedBy: approver,
			AcceptID: aid, AcceptSignature: &sig}
		if err := p.step(audit.Event{Tools: body}); err != nil {
			p.logf("cannot write the audit log: %v", err)
			continue
		}
	}
	for aid, c := range p.waiting {
		ap := audit.Approval{ID: aid, Kind: audit.ApproveCall, Session: p.opt.Session, ToolRef: c.ToolRef, Digest: c.Digest}
		a, approver, ok := p.takeAnswer(ap)
		if !ok {
			continue
		}
		delete(p.waiting, aid)
		if p.opt.Approvals.SettledElsewhere(aid) {
			// Another session of this principal took the approval up
			// (see carry.go) and holds its one use.
			p.logf("the answer to %s was taken up by another session", aid)
			continue
		}
		now := p.opt.Now()
		sig := a.Signature
		// The approval's life runs from when the human signed it, not from
		// when the gateway noticed: an answer taken at the next call, an
		// hour on, must not be fresh for a quarter of an hour more
		// (takeAnswer has checked the time parses and is not ahead).
		signed, _ := audit.ParseTime(sig.Time)
		if signed.After(now) {
			// The skew allowed for the approver's clock is no extra life.
			signed = now
		}
		g := engine.Grant{ID: aid, ToolRef: c.ToolRef, Digest: c.Digest, Approver: approver,
			Approve: a.Answer == "approve", Expires: signed.Add(p.opt.Policy.ApprovalTTL())}
		body := &audit.GrantBody{Grant: g.ID, Call: c.ID, Tool: g.Tool, Digest: g.Digest, Approver: g.Approver,
			Answer: audit.Answer(g.Approve), Expires: audit.FormatTime(g.Expires), Signature: &sig}
		if p.gateway {
			body.Server = c.Server
		}
		// An answer out of band settles nothing: it is kept for the
		// call's retry.
		// A grant kept for a retry forwards nothing: once recorded it stands,
		// even when the counters did not keep the step (ErrUnsaved).
		if err := p.step(audit.Event{At: now, Grant: &audit.GrantStep{Call: c.ID, ID: g.ID, Approver: g.Approver, Approve: g.Approve,
			Expires: g.Expires, Logged: true, Tool: g.ToolRef, Digest: g.Digest, Body: body}}); err != nil && !errors.Is(err, audit.ErrUnsaved) {
			p.logf("cannot write the audit log: %v", err)
			continue
		}
		p.settled(aid, &g)
		if p.oob.stored == nil {
			p.oob.stored = map[string]bool{}
		}
		p.oob.stored[aid] = true
	}
}

// settled marks ask aid's answer taken, with the grant made from it: in
// the state database after the log, which is the evidence (a restart
// between the two finds the log ahead, and the log wins). Called with
// p.mu held.
func (p *Proxy) settled(aid string, g *engine.Grant) {
	if err := p.opt.Approvals.Settle(aid, p.opt.Now(), g, p.opt.Principal.Subject); err != nil {
		p.logf("cannot record in the state database that %s was answered: %v", aid, err)
	}
}

// spendGrant marks the out-of-band grant that allowed call c used in the
// state database, before anything is forwarded: a grant the database
// says was used (by another session or gateway), or a database that
// cannot be written, forwards nothing. The log already records the
// decision; the call is closed as failed, so it consumes no budget and
// verify counts it as never completed.
func (p *Proxy) spendGrant(c *engine.Call, d engine.Decision) error {
	p.mu.Lock()
	stored := p.oob.stored[d.Grant]
	p.mu.Unlock()
	if !stored || d.Verdict != engine.Allow {
		return nil // no grant, or one answered in band, which lives in its call
	}
	err := p.opt.Approvals.UseGrant(d.Grant, p.opt.Session+"/"+c.ID, p.opt.Now())
	if err != nil {
		p.logf("call %s (%s) not forwarded: grant %s: %v", c.ID, c.Tool, d.Grant, err)
		p.record(c, audit.StatusFailed, nil, "", true)
	}
	return err
}

// sentence ends a reason (a policy author's text) as a sentence, so the
// one that follows it in a refusal does not run on from it.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") || strings.HasSuffix(s, "?") {
		return s
	}
	return s + "."
}
