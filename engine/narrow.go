package engine

import (
	"fmt"
	"strings"
)

// not_destinations narrows the sink gate: every destination-shaped name
// at any depth is a destination unless the contract says the path is
// payload (a form's contact_email field, a record's target_channel_id),
// which a tool sends nowhere. An entry's keys may be globs over one key
// (`data.contact_*`), and a `**` segment stands for any run of keys and
// indexes (`data.**`, `**.contact_email`), so a form whose data object
// the policy cannot list in advance is still one entry.

// notPath is one not_destinations entry.
type notPath struct {
	raw  string
	segs []notSeg
	glob bool // some segment is a glob or "**"
}

type notSeg struct {
	seg
	glob bool // key is a glob over one key: * any run, ? one character
	any  bool // "**": any run of segments, none included
}

func compileNot(c *contract, name string, cs *Contract) *compileErr {
	for i, s := range cs.NotDestinations {
		pth, err := parseNotPath(s)
		if err != nil {
			return fail(fmt.Sprintf("tool %q: not_destinations: %v", name, err), "tools", name, "not_destinations", i)
		}
		// A key no tool would name: a path that takes it out takes out
		// every argument.
		if excludes(pth, []seg{{key: "\x00every", idx: -1}}) {
			return fail(fmt.Sprintf("tool %q: not_destinations %q takes out every argument: the gate would look nowhere", name, s), "tools", name, "not_destinations", i)
		}
		// A declared sink cannot be declared payload as a whole: one of
		// the two is a mistake, and the reading that lets data out unseen
		// is not the one to guess. Narrowing inside a sink is allowed.
		for _, sp := range c.sinks {
			if excludes(pth, sp.segs) {
				return fail(fmt.Sprintf("tool %q: not_destinations %q takes out sink_params %q: a sink is a destination", name, s, sp.raw), "tools", name, "not_destinations", i)
			}
		}
		if c.fetches != nil && excludes(pth, c.fetches.segs) {
			return fail(fmt.Sprintf("tool %q: not_destinations %q takes out fetches %q: the URL a tool reads is a destination", name, s, c.fetches.raw), "tools", name, "not_destinations", i)
		}
		c.not = append(c.not, pth)
	}
	return nil
}

// parseNotPath reads a not_destinations entry: an argument path whose
// unquoted keys may be globs, and "**" segments.
func parseNotPath(s string) (notPath, error) {
	p, quoted, err := parsePath(s)
	if err != nil {
		return notPath{}, err
	}
	n := notPath{raw: s}
	for i, sg := range p.segs {
		ns := notSeg{seg: sg}
		if sg.idx < 0 && !quoted[i] {
			switch {
			case sg.key == "**":
				ns.any = true
			case strings.Contains(sg.key, "**"):
				return notPath{}, fmt.Errorf("%q: ** stands alone as a segment (data.**), a key glob uses * (contact_*)", s)
			case strings.ContainsAny(sg.key, "*?"):
				if strings.Count(sg.key, "*") > 16 {
					return notPath{}, fmt.Errorf("%q: too many *", s)
				}
				ns.glob = true
			}
		}
		n.segs = append(n.segs, ns)
		n.glob = n.glob || ns.glob || ns.any
	}
	return n, nil
}

// excludes tells whether segs lies at or under the payload path n. A key
// of n skips the list indexes before it, so `rows.channel` covers
// rows[3].channel; an index n writes must be that index; "**" takes any
// run of segments. Each step keeps the set of positions in segs that
// the entry's segments so far can end at, so no input makes it
// backtrack.
func excludes(n notPath, segs []seg) bool {
	var bufA, bufB [32]bool
	at, next := bufA[:0], bufB[:0]
	if len(segs)+1 > len(bufA) {
		at, next = make([]bool, 0, len(segs)+1), make([]bool, 0, len(segs)+1)
	}
	at = append(at, make([]bool, len(segs)+1)...)
	next = append(next, make([]bool, len(segs)+1)...)
	at[0] = true
	for _, s := range n.segs {
		clear(next)
		live := false
		for j, ok := range at {
			if !ok {
				continue
			}
			switch {
			case s.any:
				for k := j; k <= len(segs); k++ {
					next[k] = true
				}
			case s.idx >= 0:
				if j < len(segs) && segs[j] == s.seg {
					next[j+1] = true
				}
			default:
				k := j
				for k < len(segs) && segs[k].idx >= 0 {
					k++
				}
				if k < len(segs) && (s.glob && keyGlob(s.key, segs[k].key) || !s.glob && segs[k].key == s.key) {
					next[k+1] = true
				}
			}
		}
		for _, ok := range next {
			live = live || ok
		}
		if !live {
			return false
		}
		at, next = next, at
	}
	return true
}

// keyGlob matches key against glob g: * any run of characters, ? one
// character, the rest exactly. The one-star backtrack keeps it linear in
// practice and quadratic at worst.
func keyGlob(g, key string) bool {
	gr, kr := []rune(g), []rune(key)
	gi, ki, star, mark := 0, 0, -1, 0
	for ki < len(kr) {
		switch {
		case gi < len(gr) && (gr[gi] == '?' || gr[gi] == kr[ki]):
			gi++
			ki++
		case gi < len(gr) && gr[gi] == '*':
			star, mark = gi, ki
			gi++
		case star >= 0:
			gi, mark = star+1, mark+1
			ki = mark
		default:
			return false
		}
	}
	for gi < len(gr) && gr[gi] == '*' {
		gi++
	}
	return gi == len(gr)
}

// payload tells whether the value at segs is payload. Inside a sink only
// plain paths narrow: a glob ("**[0]", "to.*", "**.address") would take
// out a list or object sink whole under a name that does not say so.
func (ct *contract) payload(segs []seg) bool {
	checked, inSink := false, false
	for _, n := range ct.not {
		if n.glob {
			if !checked {
				checked, inSink = true, ct.underSink(segs)
			}
			if inSink {
				continue
			}
		}
		if excludes(n, segs) {
			return true
		}
	}
	return false
}

// underSink tells whether segs lies at or under one of the sink_params,
// read as not_destinations paths are (a key skips list indexes), with
// keys compared in any case: a server that reads "CC" as "cc" must not
// see a glob narrow its sink.
func (ct *contract) underSink(segs []seg) bool {
	for _, sp := range ct.sinks {
		i, under := 0, true
		for _, s := range sp.segs {
			for s.idx < 0 && i < len(segs) && segs[i].idx >= 0 {
				i++
			}
			if i == len(segs) || s.idx != segs[i].idx || s.idx < 0 && !strings.EqualFold(s.key, segs[i].key) {
				under = false
				break
			}
			i++
		}
		if under {
			return true
		}
	}
	return false
}

// shapedOutside is hasDestinationShaped for a contract that narrows:
// a destination-shaped name inside a payload path does not count.
func shapedOutside(ct *contract, v any, segs []seg, depth int) bool {
	if depth > maxDepth {
		return true
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			sub := append(segs[:len(segs):len(segs)], seg{key: k, idx: -1})
			if ct.payload(sub) {
				continue
			}
			if destinationShaped(k) || shapedOutside(ct, e, sub, depth+1) {
				return true
			}
		}
	case []any:
		for i, e := range v {
			if shapedOutside(ct, e, append(segs[:len(segs):len(segs)], seg{idx: i}), depth+1) {
				return true
			}
		}
	}
	return false
}
