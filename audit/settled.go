package audit

import (
	"bailiff/chain"
	"bailiff/engine"
)

// settled is a call of the session whose result has come and which no
// grant waits on: all that is asked of it again is its id (a second call
// with it is refused), its tool and digest (the grants and sources bound
// to it) and its verdict, unevaluable or not. A session keeps every call
// it made, so a long one holds tens of thousands: kept as a Pending with
// its decision and decoded strings, each took about 500 bytes and a dozen
// objects the collector marked again on every cycle. A settled call holds
// no pointer: its names are numbers in the session's table, its digest
// bytes; the rare call with redacted paths or a digest of another form
// keeps those in rare.
type settled struct {
	sum                   [32]byte // the digest "sha256:<hex>", as bytes
	server, tool, verdict uint32   // in Session.names
	flags                 uint8
}

const (
	keptUnevaluable uint8 = 1 << iota
	keptRare              // rare holds the digest as written, and the redacted paths
)

// rareCall is what a settled call keeps beyond settled, when it has it.
type rareCall struct {
	digest   string
	redacted []engine.Path
}

// names is a session's table of the strings its settled calls share.
type names struct {
	index map[string]uint32
	list  []string
}

func (n *names) of(v string) uint32 {
	if i, ok := n.index[v]; ok {
		return i
	}
	if n.index == nil {
		n.index = map[string]uint32{}
	}
	i := uint32(len(n.list))
	n.index[v] = i
	n.list = append(n.list, v)
	return i
}

// keep moves call id, settled with its result, from s.calls to s.done.
func (s *Session) keep(id string, pc *Pending) {
	c := pc.call
	k := settled{server: s.names.of(c.Server), tool: s.names.of(c.Tool), verdict: s.names.of(string(pc.decision.Verdict))}
	if pc.decision.Unevaluable {
		k.flags |= keptUnevaluable
	}
	var plain bool
	k.sum, plain = chain.ParseDigest(c.Digest)
	if !plain || len(c.Redacted) > 0 {
		k.flags |= keptRare
		if s.rare == nil {
			s.rare = map[string]rareCall{}
		}
		s.rare[id] = rareCall{digest: c.Digest, redacted: c.Redacted}
	}
	if s.done == nil {
		s.done = map[string]settled{}
	}
	s.done[id] = k
	delete(s.calls, id)
}

// pending is call id as a Pending, from s.calls or, made again, from
// s.done. One made again goes back to s.calls, so that what a caller then
// changes on it is kept.
func (s *Session) pending(id string) (*Pending, bool) {
	if pc, ok := s.calls[id]; ok {
		return pc, true
	}
	k, ok := s.done[id]
	if !ok {
		return nil, false
	}
	c := &engine.Call{ID: id, ToolRef: engine.ToolRef{Server: s.names.list[k.server], Tool: s.names.list[k.tool]}}
	if k.flags&keptRare != 0 {
		r := s.rare[id]
		c.Digest, c.Redacted = r.digest, r.redacted
		delete(s.rare, id)
	} else {
		c.Digest = chain.DigestOf(k.sum)
	}
	pc := &Pending{call: c, decision: engine.Decision{Verdict: engine.Verdict(s.names.list[k.verdict]), Unevaluable: k.flags&keptUnevaluable != 0}}
	delete(s.done, id)
	s.calls[id] = pc
	return pc, true
}
