package engine

import "strings"

// keyRef is what the index keeps of an address or host: the first output
// that held it, and the other outputs that did where they differ from it
// in server, tool or origin, so that the tier of every output holding a
// destination (tierDecision) is known without a second pass over the
// session.
type keyRef struct {
	src  int32
	more int32 // 1 + the index in taintIndex.more of the other holders; 0 for none
}

// maxHolders bounds the holders a key keeps beyond its first. A key held
// by more kinds of output than that counts as held by a stranger: the
// list ends in -1.
const maxHolders = 8

// note records that output i holds key; clone copies a key that points
// into a larger string, which the map would otherwise keep alive.
func (ix *taintIndex) note(m map[string]keyRef, key string, i int32, clone bool) {
	r, ok := m[key]
	if !ok {
		if clone {
			key = strings.Clone(key)
		}
		m[key] = keyRef{src: i}
		return
	}
	if ix.alike(r.src, i) {
		return
	}
	if r.more == 0 {
		ix.more = append(ix.more, []int32{i})
		r.more = int32(len(ix.more))
		m[key] = r
		return
	}
	hs := ix.more[r.more-1]
	for _, j := range hs {
		if j < 0 || ix.alike(j, i) {
			return
		}
	}
	if len(hs) == maxHolders {
		i = -1
	}
	ix.more[r.more-1] = append(hs, i)
}

// alike tells whether outputs i and j are of one kind: the same tool on
// the same server, from the same origin. Their tier is the same.
func (ix *taintIndex) alike(i, j int32) bool {
	a, b := &ix.sources[i], &ix.sources[j]
	return a.Server == b.Server && a.Tool == b.Tool && a.Origin == b.Origin
}

// holders calls fn with an output of each kind that holds the key r
// refers to, until fn returns false. It reports false if there were
// more kinds than the key keeps.
func (ix *taintIndex) holders(r keyRef, fn func(Source) bool) bool {
	if !fn(ix.sources[r.src]) || r.more == 0 {
		return true
	}
	for _, j := range ix.more[r.more-1] {
		if j < 0 {
			return false
		}
		if !fn(ix.sources[j]) {
			return true
		}
	}
	return true
}
