package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
)

// checkCall checks a call record's digest against its arguments, and
// notes when it was asked and whether it was put to the client.
func (set *sessionSet) checkCall(cs *audit.CallStep) {
	rec, b := set.rec, cs.Body
	if len(cs.Call.Redacted) == 0 {
		if want := argsDigest(rec.Body, b.Args); want != b.Digest {
			set.find(rec, b.Call, FindRecord, b.Digest, want, "the call's digest is not the digest of its arguments: the arguments or the digest were edited")
		}
	} else if !strings.HasPrefix(b.Digest, "hmac-sha256:") {
		set.find(rec, b.Call, FindRecord, b.Digest, "hmac-sha256:…", "a call with redacted arguments must bind grants to a keyed digest")
	}
	set.vs.asked[b.Call] = rec.TS
	if b.Elicit {
		set.vs.elicited[b.Call] = true
	}
}

// Called compares the recorded decision with the recomputed one; the
// recorded one is what the session goes on from.
func (set *sessionSet) Called(s *audit.Session, ev *audit.Event, decided, recorded engine.Decision) error {
	vs, b := set.vs, ev.Call.Body
	set.compare(vs, set.rec, b.Call, b.Tool, b.Decision, decided)
	if vs.f != nil {
		vs.f.Call(ev.At, set.rec.Seq, ev.Call.Call, recorded)
	}
	set.spend(b.Decision.Grant, b.Call)
	set.noteAsk(s, b, ev.Call.Call.ToolRef)
	return nil
}

// argsDigest is engine.ArgsDigest of a call body's arguments, taken from
// the body's bytes: a body DecodeBody accepted holds them in exactly the
// canonical encoding the digest is over.
func argsDigest(body []byte, args map[string]any) string {
	raw, ok := chain.RawField(body, "args")
	if !ok {
		return engine.ArgsDigest(args)
	}
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// compare reports a recorded decision the engine does not recompute, and
// lists one it cannot recompute.
func (set *sessionSet) compare(vs *vsession, rec chain.Record, call, tool string, got audit.Decision, want engine.Decision) {
	if want.Unevaluable {
		for _, v := range want.Possible {
			if string(v) == got.Verdict {
				reason := want.Reason
				for purged, lost := range vs.lost {
					reason = strings.ReplaceAll(reason, purged, lost)
				}
				set.unevaluable = append(set.unevaluable, Unevaluable{File: set.v.file, Seq: rec.Seq, Session: rec.Session,
					Call: call, Tool: tool, Recorded: got.Verdict, Reason: reason})
				return
			}
		}
		set.find(rec, call, FindVerdict, got.Verdict, joinVerdicts(want.Possible),
			fmt.Sprintf("the recorded verdict is not one this call could have had: %s", want.Reason))
		return
	}
	rw := audit.FromDecision(want)
	diff := decisionDiff(got, rw)
	if diff == "" {
		return
	}
	kind := FindVerdict
	if got.Check == string(engine.CheckApproval) || got.Grant != "" {
		// The recorded decision rests on a grant: say what is wrong with it.
		kind = FindGrant
		if why, ok := vs.refused[got.Grant]; ok && got.Grant != "" {
			diff = fmt.Sprintf("grant %s does not count: %s", got.Grant, why)
		} else if by, ok := vs.used[got.Grant]; ok && got.Grant != rw.Grant {
			diff = fmt.Sprintf("grant %s was already used by call %s: a grant is single use", got.Grant, by)
		} else if _, ok := vs.given[got.Grant]; !ok && got.Grant != "" {
			diff = fmt.Sprintf("no grant %s was given in this session", got.Grant)
		}
	}
	if counted := engine.Check(got.Check); (counted == engine.CheckTenantBudget || counted == engine.CheckRate) && rw.Verdict != got.Verdict {
		// The refusal rests on counts across sessions: the likeliest
		// cause is a log left out, the other a spend edited away.
		diff += fmt.Sprintf("; the recorded %s refusal rests on calls before it that no log given holds: verify it with the logs of every gateway that shared the tenant, or one of them was edited", counted)
	}
	set.find(rec, call, kind, summary(got), summary(rw), diff)
}

// spend notes that a recorded decision used grant g on call.
func (set *sessionSet) spend(g, call string) {
	vs := set.vs
	if g == "" {
		return
	}
	if _, ok := vs.used[g]; !ok {
		vs.used[g] = call
	}
	if vs.signed[g] {
		set.ledger.uses = append(set.ledger.uses, useFact{grant: g, call: call, rec: set.rec})
	}
}

func joinVerdicts(vs []engine.Verdict) string {
	var s []string
	for _, v := range vs {
		s = append(s, string(v))
	}
	return strings.Join(s, " or ")
}

func summary(d audit.Decision) string {
	s := d.Verdict + " by " + d.Check
	if d.Rule != "" {
		s += " (" + d.Rule + ")"
	}
	return s
}

// decisionDiff explains how two decisions differ, or returns "".
func decisionDiff(got, want audit.Decision) string {
	switch {
	case got.Verdict != want.Verdict || got.Check != want.Check || got.Rule != want.Rule:
		return "recomputed: " + want.Reason
	case got.Reason != want.Reason:
		return fmt.Sprintf("same verdict, different reason: recorded %q, recomputed %q", got.Reason, want.Reason)
	case got.Grant != want.Grant:
		return fmt.Sprintf("recorded grant %q, recomputed %q", got.Grant, want.Grant)
	case got.Destination != want.Destination || !sameSource(got.TaintedBy, want.TaintedBy):
		return "same verdict, different taint source or destination"
	}
	return ""
}

func sameSource(a, b *audit.Source) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
