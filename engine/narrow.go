package engine

import "fmt"

// not_destinations narrows the sink gate: every destination-shaped name
// at any depth is a destination unless the contract says the path is
// payload (a form's contact_email field, a record's target_channel_id),
// which a tool sends nowhere.

func compileNot(c *contract, name string, cs *Contract) *compileErr {
	for i, s := range cs.NotDestinations {
		pth, err := ParsePath(s)
		if err != nil {
			return fail(err.Error(), "tools", name, "not_destinations", i)
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

// excludes tells whether segs lies at or under the payload path n. A list
// index n does not write matches any element, so `rows.channel` covers
// rows[3].channel; an index it writes must be that index.
func excludes(n Path, segs []seg) bool {
	i := 0
	for _, s := range n.segs {
		for s.idx < 0 && i < len(segs) && segs[i].idx >= 0 {
			i++
		}
		if i == len(segs) || segs[i] != s {
			return false
		}
		i++
	}
	return true
}

func (ct *contract) payload(segs []seg) bool {
	for _, n := range ct.not {
		if excludes(n, segs) {
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
			if DestinationShaped(k) || shapedOutside(ct, e, sub, depth+1) {
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
