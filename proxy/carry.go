package proxy

import (
	"errors"
	"fmt"
	"os"
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
		// What did read is still taken up.
		p.logf("cannot read the approvals of earlier sessions: %v", err)
	}
	p.oob.seen = v
	now := p.opt.Now()
	if p.oob.carried == nil {
		p.oob.carried = map[string]bool{}
	}
	// The signature and the expiry first, the log after, and only for
	// what passed: an approval that expired unused costs no read of the
	// log, at this session's first call or any other's.
	var take []carry
	for _, c := range list {
		if p.oob.carried[c.Ask.ID] || !p.serves(c.Ask.Server) {
			continue
		}
		p.oob.carried[c.Ask.ID] = true // checked once: a refusal is not repeated at every call
		g, sig, err := p.carriedGrant(c, now)
		if err != nil {
			p.logf("did not take up the answer to %s (asked in session %s): %v", c.Ask.ID, c.Ask.Session, err)
			continue
		}
		take = append(take, carry{c, g, sig})
	}
	if len(take) == 0 {
		return
	}
	inLog := p.checkInLog(take)
	for _, t := range take {
		if why := inLog[t.c.Ask.ID]; why != "" {
			p.logf("did not take up the answer to %s (asked in session %s): %s", t.c.Ask.ID, t.c.Ask.Session, why)
			continue
		}
		p.takeUp(t, now)
	}
}

// carry is an approval of an earlier session that passed its signature
// and expiry checks, with the grant it makes here.
type carry struct {
	c   state.Carry
	g   engine.Grant
	sig audit.Signature
}

// takeUp writes a carried approval's grant to the log and holds it for
// its one use. Called with p.mu held.
func (p *Proxy) takeUp(t carry, now time.Time) {
	c, g, sig := t.c, t.g, t.sig
	body := &audit.GrantBody{Grant: g.ID, Call: c.Ask.Call, From: c.Ask.Session, Tool: g.Tool, Digest: g.Digest,
		Approver: g.Approver, Answer: audit.Answer(true), Expires: audit.FormatTime(g.Expires), Signature: &sig}
	if p.gateway {
		body.Server = g.Server
	}
	// A grant kept for a retry forwards nothing: once recorded it stands,
	// even when the counters did not keep the step (ErrUnsaved).
	if err := p.step(audit.Event{At: now, Grant: &audit.GrantStep{Call: c.Ask.Call, ID: g.ID, Approver: g.Approver, Approve: true,
		Expires: g.Expires, Logged: true, Tool: g.ToolRef, Digest: g.Digest, Body: body}}); err != nil && !errors.Is(err, audit.ErrUnsaved) {
		p.logf("cannot write the audit log: %v", err)
		return
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

// checkInLog checks the approvals about to be taken up against the audit
// log, which the database only points at: the asking session must be in
// this log, acting for this principal, and have recorded the call as
// asked with the tool, server and digest the database says; and no call
// of the log may have used the approval already (the database could have
// been edited while the gateway ran). It returns, by id, why one may not
// be taken up. Taking up is rare (an answer given since the last look),
// so one read of the log then is its cost.
func (p *Proxy) checkInLog(take []carry) map[string]string {
	list := make([]state.Carry, len(take))
	for i, t := range take {
		list[i] = t.c
	}
	problems := map[string]string{}
	fail := func(why string) map[string]string {
		for _, c := range list {
			problems[c.Ask.ID] = why
		}
		return problems
	}
	pending := make([]Pending, len(list))
	ids := map[string]bool{}
	for i, c := range list {
		pending[i] = Pending{ID: c.Ask.ID, Session: c.Ask.Session, Server: c.Ask.Server, Call: c.Ask.Call, Tool: c.Ask.Tool, Digest: c.Ask.Digest}
		ids[c.Ask.ID] = true
	}
	f, err := os.Open(p.opt.Approvals.Log)
	if err != nil {
		return fail("the audit log cannot be read: " + err.Error())
	}
	rec, used, err := AsksAndUses(f, pending, ids)
	f.Close()
	if err != nil {
		return fail("the audit log cannot be read: " + err.Error())
	}
	for _, c := range list {
		r := rec[c.Ask.ID]
		switch {
		case !r.Found: // FromLog finds only calls recorded as asked
			problems[c.Ask.ID] = "the audit log records no such ask: the state database says otherwise than the log"
		case r.Approval.ToolRef != (engine.ToolRef{Server: c.Ask.Server, Tool: c.Ask.Tool}) || r.Approval.Digest != c.Ask.Digest:
			problems[c.Ask.ID] = "the state database's ask disagrees with the audit log"
		case r.Principal != p.opt.Principal.Subject:
			problems[c.Ask.ID] = fmt.Sprintf("it was asked for %q, not %q", r.Principal, p.opt.Principal.Subject)
		case signedBefore(c.Answer.Signed, r.Asked):
			problems[c.Ask.ID] = "it was signed at " + c.Answer.Signed + ", before the call was asked"
		case used[c.Ask.ID] != "":
			problems[c.Ask.ID] = "the audit log shows it used already, by " + used[c.Ask.ID]
		}
	}
	return problems
}

// signedBefore tells whether a signed time (as signed) is before the ask
// at asked; one that does not parse is refused by carriedGrant.
func signedBefore(signed string, asked time.Time) bool {
	t, err := audit.ParseTime(signed)
	return err == nil && t.Before(asked.Truncate(time.Second))
}

// saveBudgets records, as the session ends, what it used of its budgets
// in the state database, for an operator to read. Called with p.mu held.
func (p *Proxy) saveBudgets() {
	if p.opt.Approvals == nil || p.sess == nil {
		return
	}
	var used []state.Budget
	for ref, n := range p.sess.State().Used() {
		used = append(used, state.Budget{Server: ref.Server, Tool: ref.Tool, Used: n})
	}
	if err := p.opt.Approvals.Store.SaveBudgets(p.opt.Session, used); err != nil {
		p.logf("cannot record the session's budgets in the state database: %v", err)
	}
}
