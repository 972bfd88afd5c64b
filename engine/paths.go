package engine

import "strconv"

// ResolvePaths applies resolve to every string a tool's path contract
// confines (its write_params, a list's elements one by one) and returns
// the arguments with the results in place, and, for each value that
// changed, its argument path (`path`, `paths[1]`) and the value as given.
// args itself is not changed.
//
// The engine confines paths lexically. A gateway in front of a local
// server resolves symlinks with this before deciding, so that the path
// decided on, the path recorded and the path the server writes are one;
// the engine stays pure because the caller supplies resolve. A value that
// is not a string is left alone: the path check denies it.
func (p *Policy) ResolvePaths(ref ToolRef, args map[string]any, resolve func(string) (string, error)) (map[string]any, map[string]string, error) {
	out := args
	var from map[string]string
	set := func(segs []seg, raw, old string) error {
		v, err := resolve(old)
		if err != nil || v == old {
			return err
		}
		if from == nil {
			out, from = deepCopy(args).(map[string]any), map[string]string{}
		}
		setAt(out, segs, v)
		from[raw] = old
		return nil
	}
	for _, w := range p.contractFor(ref).writes {
		v, ok := w.lookup(args)
		if !ok {
			continue
		}
		switch v := v.(type) {
		case string:
			if err := set(w.segs, w.raw, v); err != nil {
				return nil, nil, err
			}
		case []any:
			for i, e := range v {
				s, ok := e.(string)
				if !ok {
					continue
				}
				segs := append(append([]seg{}, w.segs...), seg{idx: i})
				if err := set(segs, w.raw+"["+strconv.Itoa(i)+"]", s); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	return out, from, nil
}

// HasPath tells whether args hold a value at the argument path given; a
// malformed path holds none.
func HasPath(args map[string]any, path string) bool {
	p, err := ParsePath(path)
	if err != nil {
		return false
	}
	_, ok := p.lookup(args)
	return ok
}

// setAt replaces the value at segs, which must exist.
func setAt(v any, segs []seg, val any) {
	for i, s := range segs {
		last := i == len(segs)-1
		if s.idx < 0 {
			m := v.(map[string]any)
			if last {
				m[s.key] = val
				return
			}
			v = m[s.key]
		} else {
			l := v.([]any)
			if last {
				l[s.idx] = val
				return
			}
			v = l[s.idx]
		}
	}
}
