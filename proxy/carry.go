package proxy

import (
	"fmt"
	"slices"
	"time"

	"bailiff/audit"
	"bailiff/engine"
	"bailiff/state"
)

// oobGrants is what a session knows of the approvals given out of band:
// stored are the grants the state database spends (its own and those it
// took up), carried the approvals of earlier sessions it looked at, seen
// the database's answers version it looked up to.
type oobGrants struct {
	stored, carried map[string]bool
	seen            string
}

// carryGrants takes up, for a later identical call of this session, the
// approvals given to asks of earlier sessions of the same log and
// principal that were never used: the gateway restarted between the ask
// and the answer, or between the answer and the retry, or the client
// came back in a new session. Each is checked as an answer to this
// session's own ask would be (a trusted key, not the principal's, over
// exactly that ask, signed after it and not in the future), lives the
// policy's TTL from its signing (one that expired meanwhile stays
// expired), and is written to the log as a grant naming the session it
// was asked in, which verify checks against that session's record. Its
// one use is spent in the state database, so of two sessions holding it
// one only uses it. Called with p.mu held.
func (p *Proxy) carryGrants() {
	v, err := p.opt.Approvals.AnswersVersion()
	if err == nil && v == p.oob.seen {
		return // no answer given since the last look
	}
	list, err := p.opt.Approvals.Carryable(p.opt.Session, p.opt.Principal.Subject)
	if err != nil {
		p.logf("cannot read the approvals of earlier sessions: %v", err)
		return
	}
	p.oob.seen = v
	now := p.opt.Now()
	for _, c := range list {
		if p.oob.carried[c.Ask.ID] || !p.serves(c.Ask.Server) {
			continue
		}
		if p.oob.carried == nil {
			p.oob.carried = map[string]bool{}
		}
		p.oob.carried[c.Ask.ID] = true // checked once: a refusal is not repeated at every call
		g, sig, err := p.carriedGrant(c, now)
		if err != nil {
			p.logf("did not take up the answer to %s (asked in session %s): %v", c.Ask.ID, c.Ask.Session, err)
			continue
		}
		body := &audit.GrantBody{Grant: g.ID, Call: c.Ask.Call, From: c.Ask.Session, Tool: g.Tool, Digest: g.Digest,
			Approver: g.Approver, Answer: audit.Answer(true), Expires: audit.FormatTime(g.Expires), Signature: &sig}
		if p.gateway {
			body.Server = g.Server
		}
		if err := p.step(audit.Event{At: now, Grant: &audit.GrantStep{Call: c.Ask.Call, ID: g.ID, Approver: g.Approver, Approve: true,
			Expires: g.Expires, Logged: true, Tool: g.ToolRef, Digest: g.Digest, Body: body}}); err != nil {
			p.logf("cannot write the audit log: %v", err)
			continue
		}
		if !c.Granted {
			p.settled(g.ID, &g)
		}
		if p.oob.stored == nil {
			p.oob.stored = map[string]bool{}
		}
		p.oob.stored[g.ID] = true
		p.logf("took up the approval %s by %s (asked in session %s), usable once until %s", g.ID, g.Approver, c.Ask.Session, audit.FormatTime(g.Expires))
	}
}

// carriedGrant checks an approval of another session as takeAnswer checks
// one of this session's, and returns the grant it makes here.
func (p *Proxy) carriedGrant(c state.Carry, now time.Time) (engine.Grant, audit.Signature, error) {
	ref := engine.ToolRef{Server: c.Ask.Server, Tool: c.Ask.Tool}
	sig := audit.Signature{Key: c.Answer.Key, Sig: c.Answer.Sig, Time: c.Answer.Signed}
	ap := audit.Approval{ID: c.Ask.ID, Kind: audit.ApproveCall, Session: c.Ask.Session, ToolRef: ref, Digest: c.Ask.Digest, Answer: "approve"}
	name, err := audit.TrustedApprover(ap, sig, p.opt.ApproverKeys, p.opt.Principal.Subject)
	if err != nil {
		return engine.Grant{}, sig, err
	}
	signed, err := audit.ParseTime(sig.Time)
	switch {
	case err != nil:
		return engine.Grant{}, sig, fmt.Errorf("signed time %q is not %s", sig.Time, audit.TimeFormat)
	case signed.Before(c.Ask.Asked.Truncate(time.Second)):
		return engine.Grant{}, sig, fmt.Errorf("it was signed at %s, before the ask", sig.Time)
	case signed.After(now.Add(clockSkew)):
		return engine.Grant{}, sig, fmt.Errorf("it was signed at %s, in the future", sig.Time)
	}
	if signed.After(now) {
		signed = now
	}
	g := engine.Grant{ID: c.Ask.ID, ToolRef: ref, Digest: c.Ask.Digest, Approver: name, Approve: true,
		Expires: signed.Add(p.opt.Policy.ApprovalTTL())}
	if !now.Before(g.Expires) {
		return g, sig, fmt.Errorf("it expired at %s", audit.FormatTime(g.Expires))
	}
	return g, sig, nil
}

// serves tells whether a call to server comes to this session: its one
// server, or one of a gateway's.
func (p *Proxy) serves(server string) bool {
	if !p.gateway {
		return server == p.opt.Server
	}
	return slices.ContainsFunc(p.ups, func(u *upstream) bool { return u.name == server })
}
