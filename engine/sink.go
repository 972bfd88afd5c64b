package engine

import (
	"cmp"
	"fmt"
	"slices"
)

// dest is one flattened destination value of a call.
type dest struct {
	norm    string
	raw     string // as the agent sent it, for reasons
	path    string
	unknown bool // redacted: its value cannot be known
	fixed   bool // one of the values the tool's pinned schema allows there
}

// gated tells whether the sink gate applies: the contract says the tool
// exfiltrates, or it says nothing and an argument looks like a destination.
func gated(ct *contract, c *Call) bool {
	switch ct.exfil {
	case exfilYes:
		return true
	case exfilNo:
		return false
	}
	if len(ct.not) > 0 {
		if shapedOutside(ct, c.Args, nil, 0) {
			return true
		}
	} else if hasDestinationShaped(c.Args, 0) {
		return true
	}
	for _, r := range c.Redacted {
		if ct.payload(r.segs) {
			continue
		}
		for _, s := range r.segs {
			if s.idx < 0 && destinationShaped(s.key) {
				return true
			}
		}
	}
	return false
}

func hasDestinationShaped(v any, depth int) bool {
	if depth > maxDepth {
		return true
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if destinationShaped(k) || hasDestinationShaped(e, depth+1) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasDestinationShaped(e, depth+1) {
				return true
			}
		}
	}
	return false
}

// destinations flattens every destination of the call: the sink_params,
// every destination-shaped argument at any depth, and, when neither is
// present, every argument. Redacted values come back as unknown.
func destinations(ct *contract, c *Call, out []dest) []dest {
	return destinationsIn(nil, ct, c, out)
}

// destinationsIn is destinations, marking those the schema pinned in s
// fixes (none when s is nil).
func destinationsIn(s *State, ct *contract, c *Call, out []dest) []dest {
	w := walker{c: c, ct: ct, out: out}
	if s != nil && s.fixed != nil {
		w.fixed = s.fixed[pinName(s, c)]
	}
	for _, sp := range ct.sinks {
		v, present, unk := valueAt(c, sp)
		switch {
		case unk:
			w.out = append(w.out, dest{path: sp.raw, unknown: true})
		case present:
			w.flatten(v, sp.segs, 0)
		}
	}
	w.shaped(c.Args, nil, 0)
	if len(w.out) == 0 {
		w.flatten(c.Args, nil, 0)
	}
	// Dedupe, keeping the first path a value was found under. Values are
	// the same only when they are the same as sent: two that normalize
	// alike can go to different places.
	seen := map[string]bool{}
	kept := w.out[:0]
	for _, d := range w.out {
		key := d.norm + "\x00" + d.raw
		if d.fixed {
			// The same value elsewhere is not fixed there: judge it too.
			key += "\x00fixed"
		}
		if d.unknown {
			key = "\x00" + d.path
		}
		if !seen[key] {
			seen[key] = true
			kept = append(kept, d)
		}
	}
	return kept
}

type walker struct {
	c     *Call
	ct    *contract
	fixed map[string][]string // what the tool's pinned schema fixes, by fixedPath
	out   []dest
}

func (w *walker) redacted(segs []seg) bool {
	for _, r := range w.c.Redacted {
		if covers, inside := overlap(r, Path{segs: segs}); covers || inside {
			return true
		}
	}
	return false
}

// shaped finds destination-shaped keys anywhere in v and flattens them.
func (w *walker) shaped(v any, segs []seg, depth int) {
	if depth > maxDepth {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(v) {
			sub := append(segs[:len(segs):len(segs)], seg{key: k, idx: -1})
			if len(w.ct.not) > 0 && w.ct.payload(sub) {
				continue
			}
			if destinationShaped(k) {
				w.flatten(v[k], sub, depth+1)
				continue
			}
			w.shaped(v[k], sub, depth+1)
		}
	case []any:
		for i, e := range v {
			w.shaped(e, append(segs[:len(segs):len(segs)], seg{idx: i}), depth+1)
		}
	}
	if len(segs) == 0 {
		// A redacted destination-shaped key is a destination of unknown value.
		for _, r := range w.c.Redacted {
			if n := len(r.segs); n > 0 && r.segs[n-1].idx < 0 && destinationShaped(r.segs[n-1].key) && !w.ct.payload(r.segs) {
				w.out = append(w.out, dest{path: r.raw, unknown: true})
			}
		}
	}
}

func (w *walker) flatten(v any, segs []seg, depth int) {
	if len(w.ct.not) > 0 && w.ct.payload(segs) {
		return
	}
	if len(w.c.Redacted) > 0 && len(segs) > 0 && w.redacted(segs) {
		w.out = append(w.out, dest{path: pathString(segs), unknown: true})
		return
	}
	if depth > maxDepth {
		w.out = append(w.out, dest{path: pathString(segs), unknown: true})
		return
	}
	switch v := v.(type) {
	case string:
		if n := Normalize(v); n != "" {
			w.out = append(w.out, dest{norm: n, raw: v, path: pathString(segs), fixed: w.fixed != nil && slices.Contains(w.fixed[fixedPath(segs)], v)})
		}
	case map[string]any:
		for _, k := range sortedKeys(v) {
			w.flatten(v[k], append(segs[:len(segs):len(segs)], seg{key: k, idx: -1}), depth+1)
		}
	case []any:
		for i, e := range v {
			w.flatten(e, append(segs[:len(segs):len(segs)], seg{idx: i}), depth+1)
		}
	case nil, bool:
	default:
		if s, ok := scalarText(v); ok {
			w.out = append(w.out, dest{norm: s, raw: s, path: pathString(segs)})
		}
	}
}

func pathString(segs []seg) string {
	b := make([]byte, 0, 32)
	for i, s := range segs {
		if s.idx >= 0 {
			b = fmt.Appendf(b, "[%d]", s.idx)
			continue
		}
		if i > 0 {
			b = append(b, '.')
		}
		b = append(b, s.key...)
	}
	return string(b)
}

type destOutcome uint8

const (
	destOK destOutcome = iota
	destTainted
	destMiss
)

// sinkGate decides an exfiltrating call: trusted or approved destinations
// pass; one seen in untrusted output (or holding an address or host seen
// there) is tainted; anything else must be confirmed by a human.
func sinkGate(p *Policy, s *State, ct *contract, c *Call, o *oracle) Decision {
	var buf [8]dest
	ds := destinationsIn(s, ct, c, buf[:0])
	var miss *dest
	var missWhy string // why the missed destination's readings keep it untrusted
	var fixed []*dest
	var self *Decision
	for i := range ds {
		d := &ds[i]
		if d.fixed {
			fixed = append(fixed, d)
			continue
		}
		out, src, why := judgeDest(s, ct, d, o)
		switch out {
		case destTainted:
			if d.unknown {
				return Decision{Verdict: ct.onTaint, Check: CheckTaint, Reason: fmt.Sprintf("redacted destination %s could be tainted", d.path)}
			}
			if pd := phraseDecision(d, src, why); pd != nil {
				// Asked only if no other destination is denied.
				self = cmp.Or(self, pd)
				continue
			}
			tier := tierDecision(p, ct, s, d)
			if sd := tier.d; sd != nil {
				if sd.Verdict == Deny {
					return *sd
				}
				// Asked only if no other destination is denied.
				self = cmp.Or(self, sd)
				continue
			}
			if tier.by != nil && p.firstParty(src) {
				// Named: the stranger's output that keeps it at on_taint.
				src, why = *tier.by, tier.why
			}
			by := src
			return Decision{Verdict: ct.onTaint, Check: CheckTaint, TaintedBy: &by, Destination: d.norm,
				Reason: fmt.Sprintf("destination %s %q %s in untrusted %s", d.path, d.raw, why, src)}
		case destMiss:
			if miss == nil {
				miss, missWhy = d, why
			}
		}
	}
	// A destination nobody published is asked about by name first: an
	// approval covers every destination of the call, so the ask must not
	// show the site's own address and hide an unknown one.
	if miss == nil {
		if self != nil {
			return *self
		}
		if len(fixed) > 0 {
			// Still the rule's allow; the reason adds why the gate let the
			// destinations through.
			return Decision{Verdict: Allow, Reason: fixedReason(fixed)}
		}
		return Decision{Verdict: Allow}
	}
	reason := fmt.Sprintf("destination %s %q is neither trusted nor approved: a human must confirm", miss.path, miss.raw)
	if miss.unknown {
		reason = fmt.Sprintf("redacted destination %s cannot be checked: a human must confirm", miss.path)
	} else if missWhy != "" {
		reason = fmt.Sprintf("destination %s %q is not trusted, because %s; a human must confirm", miss.path, miss.raw, missWhy)
	}
	d := Decision{Verdict: Ask, Check: CheckTaint, Destination: miss.norm, Reason: reason}
	if self != nil {
		// The human approves the whole call, so they are told of the
		// site's own address as well.
		d.TaintedBy = self.TaintedBy
		d.Reason += "; also " + self.Reason
	}
	return d
}
