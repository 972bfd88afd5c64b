package verify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
)

// checkGrant checks a grant record before the driver takes it: that it
// lives no longer than the policy allows, and that it is an authentic
// answer. One that is not approves nothing: the finding says why, and
// the call it answers is recomputed as declined (a grant for a later
// call is not given at all).
func (set *sessionSet) checkGrant(s *audit.Session, gs *audit.GrantStep, g *engine.Grant) error {
	rec, vs, b := set.rec, set.vs, gs.Body
	vs.given[b.Grant] = b.Call
	// The expiry is not under the approver's signature: an approval that
	// outlives the policy's TTL is an edited one, and it counts only for
	// as long as the policy lets it.
	// A signed approval lives from its signing, however late it is
	// recorded: one taken up by a later session can be recorded long
	// after.
	limit, from := grantLimit(s.Policy(), rec.TS), "its record's time"
	if b.Signature != nil {
		if signed, err := time.Parse(chain.TimeFormat, b.Signature.Time); err == nil && grantLimit(s.Policy(), signed).Before(limit) {
			limit, from = grantLimit(s.Policy(), signed), "its signed time"
		}
	}
	if g.Expires.After(limit) {
		set.find(rec, b.Call, FindGrant, "expires "+b.Expires, "expires by "+limit.UTC().Format(chain.TimeFormat),
			fmt.Sprintf("grant %s expires at %s, later than %s plus the policy's approval TTL (%s): an approval lives no longer than the policy allows",
				b.Grant, b.Expires, from, s.Policy().ApprovalTTL()))
		g.Expires = limit
	}
	if problem := vs.grantProblem(s, rec, b, g.Server); problem != "" {
		set.find(rec, b.Call, FindGrant, b.Approver+" "+b.Answer, "not approved", problem)
		vs.refused[b.Grant] = problem
		if b.Decision == nil {
			return errSkip
		}
		g.Approve = false
		return nil
	}
	if b.Signature != nil {
		vs.signed[b.Grant] = true
	}
	if b.From != "" {
		set.noteCarry(s, b, g.Server)
	}
	return nil
}

// Granted compares a settling grant's recorded decision with the
// recomputed one. A grant that records a decision claims to have settled
// its call: that call must have been asked and not settled since. One
// without is for a later identical call.
func (set *sessionSet) Granted(_ *audit.Session, ev *audit.Event, pc *audit.Pending, g engine.Grant, settles bool, decided, recorded engine.Decision) error {
	rec, vs, b := set.rec, set.vs, ev.Grant.Body
	switch {
	case !settles && b.Decision != nil:
		set.find(rec, b.Call, FindGrant, summary(*b.Decision), "no decision",
			fmt.Sprintf("the grant records a decision, but call %q was not waiting for an answer", b.Call))
	case !settles:
		if vs.f != nil {
			vs.f.Grant(ev.At, g)
		}
	default:
		set.compare(vs, rec, b.Call, pc.Call().Tool, *b.Decision, decided)
		if vs.f != nil {
			vs.f.Settle(ev.At, b.Call, g, recorded)
		}
		set.spend(b.Decision.Grant, b.Call)
	}
	return nil
}

// loadResult reads a result's output from the evidence store: what is
// missing or altered is reported, and the session counts it unknown.
func (set *sessionSet) loadResult(s *audit.Session, rs *audit.ResultStep) error {
	rec, vs, b := set.rec, set.vs, rs.Body
	src, err := s.Source(b.Call, b.ToolRef, int(rec.Seq))
	if err != nil {
		set.find(rec, b.Call, FindRecord, "", "", "result "+err.Error())
		return errSkip
	}
	if b.Content == "" {
		return nil
	}
	n := min(max(b.Size, 1), maxInFlight)
	if err := inFlight.Acquire(context.Background(), n); err != nil {
		return err
	}
	set.held = n
	text, err := set.v.cache.Evidence(b.Content)
	out := &audit.Output{Text: text}
	switch {
	case err == nil:
	case errors.Is(err, chain.ErrPurged):
		out = &audit.Output{Unknown: true}
	case errors.Is(err, chain.ErrMissing) && set.v.noStore:
		// Verified without its store, as the caller was warned: every
		// output is unknown, and what depended on one is unevaluable.
		out = &audit.Output{Unknown: true}
	case errors.Is(err, chain.ErrMissing):
		set.find(rec, b.Call, FindEvidence, b.Content, "", fmt.Sprintf("evidence %s is missing: it is not in the store and no purge removed it", b.Content))
		vs.lose(src, "missing")
		out = &audit.Output{Unknown: true}
	default:
		set.find(rec, b.Call, FindEvidence, b.Content, "", err.Error())
		var ee *chain.EvidenceError
		if errors.As(err, &ee) {
			vs.lose(src, "altered")
		}
		out = &audit.Output{Unknown: true}
	}
	if vs.f != nil && !out.Unknown {
		// The session and its follower take the same text: analyze it
		// once.
		out.Analyzed = &engine.Analyzed{Text: out.Text}
	}
	rs.Out = out
	return nil
}

// grantProblem says why a grant record is not an authentic answer, or
// returns "". An out-of-band grant must carry a signature, by a key the
// session trusts and not the principal's, over exactly this ask, made
// after the call was asked and not after the grant was recorded. Only an
// elicitation grant is unsigned, and it must settle a call the gateway
// marked as put to the client (elicit), with the id the gateway gives it.
func (vs *vsession) grantProblem(s *audit.Session, rec chain.Record, b *audit.GrantBody, server string) string {
	if b.Signature == nil {
		switch {
		case b.Approver != audit.ElicitationApprover:
			return fmt.Sprintf("grant %s by %q is not signed: an out-of-band answer counts only signed by an approver key", b.Grant, b.Approver)
		case b.Decision == nil || !vs.elicited[b.Call] || b.Grant != "elicit-"+b.Call:
			return fmt.Sprintf("grant %s claims to be an answer through the client, but call %s was not put to the client (or the grant does not settle it)", b.Grant, b.Call)
		}
		return ""
	}
	ap := audit.Approval{ID: b.Grant, Kind: audit.ApproveCall, Session: rec.Session, ToolRef: engine.ToolRef{Server: server, Tool: b.Tool},
		Digest: b.Digest, Answer: b.Answer}
	asked := vs.asked[b.Call]
	if b.From != "" {
		// Asked in another session, which signed it: when, and whether
		// at all, is checked once every session is read (crossCheck).
		ap.Session, asked = b.From, time.Time{}
	}
	return vs.signatureProblem(s, rec, "grant "+b.Grant, ap, *b.Signature, b.Approver, asked)
}

// acceptProblem is grantProblem for a tools record accepting a changed
// definition: one definition, signed as a "definition" approval.
func (vs *vsession) acceptProblem(s *audit.Session, rec chain.Record, b *audit.ToolsBody) string {
	if b.AcceptSignature == nil {
		return fmt.Sprintf("the acceptance by %q is not signed", b.AcceptedBy)
	}
	if len(b.Accept) != 1 {
		return fmt.Sprintf("a signed acceptance is for one definition, not %d", len(b.Accept))
	}
	ap := audit.Approval{ID: b.AcceptID, Kind: audit.ApproveDefinition, Session: rec.Session, ToolRef: engine.ToolRef{Server: s.State().Server, Tool: b.Accept[0].Name},
		Digest: b.Accept[0].Digest, Answer: "approve"}
	return vs.signatureProblem(s, rec, "the acceptance "+b.AcceptID, ap, *b.AcceptSignature, b.AcceptedBy, time.Time{})
}

func (vs *vsession) signatureProblem(s *audit.Session, rec chain.Record, what string, ap audit.Approval, sig audit.Signature, approver string, asked time.Time) string {
	name, err := audit.TrustedApprover(ap, sig, vs.approvers, s.State().Principal.Subject)
	if err != nil {
		return fmt.Sprintf("%s: %v", what, err)
	}
	if name != approver {
		return fmt.Sprintf("%s names approver %q but is signed by %q", what, approver, name)
	}
	signed, err := time.Parse(chain.TimeFormat, sig.Time)
	switch {
	case err != nil:
		return fmt.Sprintf("%s: signed time %q is not %s", what, sig.Time, chain.TimeFormat)
	case signed.Before(asked.Truncate(time.Second)):
		return fmt.Sprintf("%s was signed at %s, before the call was asked", what, sig.Time)
	case signed.After(rec.TS.Add(time.Minute)):
		return fmt.Sprintf("%s was signed at %s, after it was recorded", what, sig.Time)
	}
	return ""
}

// answerSkew is how far ahead of the gateway's clock an approver's signed
// time may be (the gateway's own allowance), and so how much later than
// its record plus the TTL an honest grant may expire.
const answerSkew = time.Minute

// grantLimit is the latest expiry a grant recorded at ts may honestly
// carry: the gateway takes an answer no later than it writes its record,
// and an approval lives the policy's TTL from its signing.
func grantLimit(p *engine.Policy, ts time.Time) time.Time {
	return ts.Add(p.ApprovalTTL() + answerSkew)
}
