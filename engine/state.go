package engine

import (
	"reflect"
	"time"
)

// Principal is who the agent acts for.
type Principal struct {
	Subject string   `json:"subject"`
	Groups  []string `json:"groups,omitempty"`
	Scopes  []string `json:"scopes,omitempty"`
	// Email is the principal's verified address, which
	// trusted_destinations: [principal] trusts.
	Email string `json:"email,omitempty"`
	// Authenticated says how Subject was established: AuthOIDC by a
	// verified token, whose issuer and signing key are Issuer and KeyID;
	// AuthNone when no token was checked (the local user, or a name the
	// gateway was configured with). Empty in logs older than identity.
	Authenticated string `json:"authenticated,omitempty"`
	Issuer        string `json:"issuer,omitempty"`
	KeyID         string `json:"key_id,omitempty"`
	// GroupsClaim is the claim Groups were read from: a mapping that
	// reads another claim cannot be scored on them.
	GroupsClaim string `json:"groups_claim,omitempty"`
	// Tenant is whose ceiling the principal's calls spend: the claim the
	// identity config names. Empty is the one local tenant.
	Tenant string `json:"tenant,omitempty"`
}

// How a principal was established (Principal.Authenticated).
const (
	AuthOIDC = "oidc"
	AuthNone = "none"
)

// Call is one tools/call as the engine sees it.
type Call struct {
	ID string
	ToolRef
	Args map[string]any
	// Redacted lists argument paths whose values are unknown (removed
	// before the call was written down). Decide treats predicates over
	// them as unknown.
	Redacted []Path
	// Digest binds grants to this exact call: ArgsDigest of the
	// unredacted arguments, or the HMAC recorded in its place.
	Digest string
}

// Grant is a human answer to an ask, bound to one call.
type Grant struct {
	ID string
	ToolRef
	Digest   string
	Approver string
	Approve  bool
	Expires  time.Time
}

// State is what the engine remembers of one session: the pinned tools,
// the budget used, the untrusted output seen, and the grants given. The
// caller feeds it events in order; Decide changes nothing a later
// decision could tell (it may index waiting output: lazy.go).
type State struct {
	Session   string
	Server    string
	Principal Principal

	pins       map[string]string              // tool -> definition digest at session start
	fixed      map[string]map[string][]string // tool -> argument path -> values its pinned schema fixes
	current    map[string]string              // nil until the tool list changes
	used       map[ToolRef]int                // forwarded, non-failed calls per tool on its server
	forwarded  map[string]ToolRef             // call id -> tool, for calls that consumed budget
	taint      taintIndex
	grants     []Grant
	spent      map[string]bool   // grant ids already used
	approved   map[string]bool   // normalized destinations a human approved
	purged     []Source          // untrusted output whose text is unknown: read by unknownOutputs
	waiting    []waiting         // untrusted output not yet indexed (lazy.go)
	waitingN   int               // bytes of text waiting
	indexAfter int               // indexAfter, or 0 in tests that index at once
	self       string            // the principal's address, normalized; "" for none or not one address
	ledger     *Ledger           // the session's own, unless ShareLedger gave one
	charges    map[string]charge // call id -> what it spent, until its result
}

// NewState starts a session with the tools listed at its start.
func NewState(session, server string, principal Principal, tools []ToolDef) *State {
	s := &State{
		Session: session, Server: server, Principal: principal,
		pins: map[string]string{}, used: map[ToolRef]int{}, forwarded: map[string]ToolRef{},
		spent: map[string]bool{}, approved: map[string]bool{},
		self:   principalAddress(principal.Email),
		ledger: NewLedger(), charges: map[string]charge{},
		indexAfter: indexAfter,
	}
	for _, t := range tools {
		s.pin(t)
	}
	return s
}

// pin pins a tool to its definition, and to the values its schema fixes.
func (s *State) pin(t ToolDef) {
	s.pins[t.Name] = t.Digest
	if t.Fixed != nil {
		if s.fixed == nil {
			s.fixed = map[string]map[string][]string{}
		}
		s.fixed[t.Name] = t.Fixed
	} else {
		delete(s.fixed, t.Name)
	}
}

// ShareLedger has the session spend and count in l, with the other
// sessions that share it, instead of in a ledger of its own. Call it
// before the first call.
func (s *State) ShareLedger(l *Ledger) { s.ledger = l }

// SpillTo lets the session's untrusted output text leave memory: once
// more than after bytes of it are held, every full block goes to bs,
// which the caller provides (the engine does no I/O). Decisions do not
// change; a search reads back the blocks it needs. Call it before the
// first output, and Close the state when the session is done.
func (s *State) SpillTo(bs BlockStore, after int) {
	s.taint.store, s.taint.spillAfter = bs, after
}

// Err is the first error of the state's block store. After one, a
// decision may have missed output it could not read back: the caller must
// not trust it, and should stop. Output waiting for the index has not
// been written yet (lazy.go), so a failing store shows here once a
// decision first needs the index, and before that no decision read it.
func (s *State) Err() error { return s.taint.err }

// Close frees the blocks the session spilled. The state is not used
// after.
func (s *State) Close() {
	s.waiting, s.waitingN = nil, 0
	s.taint.release()
}

// ListTools records a later tools/list answer (after list_changed): the
// pins stay as they were, and calls are checked against both.
func (s *State) ListTools(tools []ToolDef) {
	s.current = make(map[string]string, len(tools))
	for _, t := range tools {
		s.current[t.Name] = t.Digest
	}
}

// AddOutput records the text of a tool result. Output from a source the
// policy trusts does not taint; everything else does, once indexed
// (lazy.go).
func (s *State) AddOutput(p *Policy, src Source, text string) {
	if p.trustedSource(src) {
		return
	}
	s.wait(waiting{src: src, text: text})
}

// AddPurged records untrusted output whose text is no longer known (its
// evidence was purged). Any destination long enough to be tainted could
// have appeared in it, so a decision that turns on that is unevaluable,
// never silently clean.
func (s *State) AddPurged(p *Policy, src Source) {
	if p.trustedSource(src) {
		return
	}
	s.wait(waiting{src: src, purged: true})
}

// AddGrant records a grant given out of band, for a later identical call.
func (s *State) AddGrant(g Grant) { s.grants = append(s.grants, g) }

// Apply records the effect of a final decision made at now: an allowed
// call is forwarded, consumes budget, spends its tenant's ceiling and
// takes its rate slots; a grant it used is spent; the destinations of a
// call a human approved become approved for the session.
func (s *State) Apply(p *Policy, c *Call, d Decision, now time.Time) {
	if d.Grant != "" {
		s.spent[d.Grant] = true
	}
	if d.Verdict != Allow {
		return
	}
	ref := callRef(s, c)
	s.used[ref]++
	if c.ID != "" {
		s.forwarded[c.ID] = ref
	}
	s.consume(p, c, d, now)
	if d.Check == CheckApproval {
		ct := p.contractFor(callRef(s, c))
		for _, dst := range destinations(ct, c, nil) {
			if !dst.unknown {
				s.approved[dst.norm] = true
			}
		}
	}
}

// Used is the budget the session has used: its forwarded calls that did
// not fail, per tool. The map is the caller's.
func (s *State) Used() map[ToolRef]int {
	out := make(map[ToolRef]int, len(s.used))
	for ref, n := range s.used {
		if n > 0 {
			out[ref] = n
		}
	}
	return out
}

// Failed records that a forwarded call failed, at now: it gives its
// budget and its tenant's spending back.
func (s *State) Failed(callID string, now time.Time) {
	s.refund(callID, now)
	if ref, ok := s.forwarded[callID]; ok {
		s.used[ref]--
		delete(s.forwarded, callID)
	}
}

// SharesState tells whether a session's State, fed one history, is the
// same under q as under p, so that one State can serve decisions under
// both: what a policy changes in a State is which outputs taint it (the
// trusted sources) and which destinations an approval approves (the
// contracts). It holds for p and its variants by Without, which switch
// checks and rules off and share the rest, and is decided by identity of
// those compiled parts, never by comparing them: policies loaded apart
// each keep their own State.
func (p *Policy) SharesState(q *Policy) bool {
	if p == q {
		return true
	}
	sameSources := len(p.sources) == len(q.sources) && (len(p.sources) == 0 || &p.sources[0] == &q.sources[0])
	sameGlobs := len(p.contracts.globs) == len(q.contracts.globs) && (len(p.contracts.globs) == 0 || &p.contracts.globs[0] == &q.contracts.globs[0])
	return sameSources && sameGlobs && sameMap(p.contracts.exact, q.contracts.exact) && sameMap(p.servers, q.servers)
}

// sameMap tells whether two maps are one, or both empty.
func sameMap[K comparable, V any](a, b map[K]V) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer())
}
