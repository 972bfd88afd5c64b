package engine

import (
	"bytes"
	"sort"
	"strings"
)

// minTaintLen is the shortest normalized string that can be tainted: a
// shorter one ("ok", "yes", "bob") appears in some output by accident.
const minTaintLen = 6

// taintIndex holds the untrusted output of a session: the normalized text
// of every output, one after another, for substring matching, and the
// email addresses and hosts seen in it, indexed as the output arrives, so
// that the common case (an email or URL destination) is a map lookup
// whatever the session's size. Substring matching is narrowed by a
// trigram filter per 64 KiB block of the text, so a search touches only
// the blocks that could hold the destination.
//
// The text is in memory (buf) unless the caller gave a BlockStore: then,
// once more than spillAfter bytes are held, every full block moves to the
// store and only the filters, the maps and the last partial block stay,
// so a session's memory grows with its output only by the filters; a
// search reads back only the candidate blocks. A spilled block's filter
// is folded into one per group of superBlocks blocks (a superset, so a
// block it rules out still cannot hold the string), which keeps them a
// thirty-second of the text instead of an eighth.
type taintIndex struct {
	sources []Source
	starts  []int  // where each source's text starts in the text
	buf     []byte // the text from position base on
	base    int    // text before base is in store, one block per handle
	size    int    // bytes of text: base + len(buf)
	tail    [2]byte
	filters []*trigramFilter // nil for a spilled block: see groups
	groups  []*trigramFilter // for block k, groups[k/superBlocks], once spilled
	emails  map[string]keyRef
	hosts   map[string]keyRef
	more    [][]int32 // the other holders of a key: keyRef.more
	forms   []int     // where each source's decoded forms begin in the text
	cut     []int32   // sources whose decoded forms were not all kept (maxFormText)

	store      BlockStore
	spillAfter int
	spilled    []int64 // the handle of each block before base
	scratch    []byte  // blocks read back, two at a time
	have       int     // the block in scratch's second half, -1 for none
	err        error   // the store's first error
}

const (
	superBlocks = 4
	blockShift  = 16 // 64 KiB blocks
	blockSize   = 1 << blockShift
	filterBits  = 1 << 16
)

// trigramFilter has a bit set for every trigram that starts in its block.
type trigramFilter [filterBits / 64]uint64

func trigram(a, b, c byte) uint32 {
	return (uint32(a)<<16 | uint32(b)<<8 | uint32(c)) * 0x9E3779B1 >> (32 - 16)
}

func (ix *taintIndex) add(src Source, text string) {
	if ix.emails == nil {
		ix.emails = map[string]keyRef{}
		ix.hosts = map[string]keyRef{}
	}
	n := Normalize(text)
	i := int32(len(ix.sources))
	ix.sources = append(ix.sources, src)
	// The hosts of URLs in the text, read as a client reads them from the
	// raw text: escapes, IPv6 and IPv4 forms, '_', and "ß" (which the
	// case fold would turn into "ss") are indexed where the client goes.
	urlHosts(text, func(h string) { ix.note(ix.hosts, h, i, false) })
	ix.starts = append(ix.starts, ix.size)
	ix.appendPiece(n)
	ix.forms = append(ix.forms, ix.size)
	tokens(n, ix.indexer(i))
	ix.addForms(i, text, n)
	ix.appendPiece("\x00")
}

// formSep comes before each decoded form of an output in the text: a
// byte no UTF-8 text holds, so no destination's match can join a form to
// what precedes it. A NUL ends each output.
const formSep = "\xff"

// appendPiece adds t to the text of the last source, with its trigrams.
func (ix *taintIndex) appendPiece(t string) {
	ix.grams(ix.size, t)
	ix.appendText(t)
}

// appendText adds t to the text. With a store, it goes a block at a time,
// spilling as it goes, so that one large output does not leave buf (and
// its capacity, for the rest of the session) as large as itself.
func (ix *taintIndex) appendText(t string) {
	if ix.buf == nil {
		ix.buf = ix.pooledText()
	}
	ix.size += len(t)
	if ix.store == nil {
		ix.buf = append(ix.buf, t...)
		return
	}
	for len(t) > 0 {
		k := min(len(t), blockSize)
		ix.buf = append(ix.buf, t[:k]...)
		t = t[k:]
		if len(ix.buf) > ix.spillAfter {
			ix.spill()
		}
	}
}

// grams sets the filter bits of every trigram that ends in t, the text
// about to be appended at position at: the first two start in the text
// before it, whose last two bytes tail keeps (they may be in the store).
func (ix *taintIndex) grams(at int, t string) {
	for j := 0; j < len(t); {
		p := at + j - 2 // where the trigram ending at t[j] starts
		if p < 0 {
			j++
			continue
		}
		k := p >> blockShift
		for k >= len(ix.filters) {
			ix.filters = append(ix.filters, new(trigramFilter))
		}
		f := ix.filter(k)
		if j < 2 {
			var h uint32
			if j == 0 {
				h = trigram(ix.tail[0], ix.tail[1], t[0])
			} else {
				h = trigram(ix.tail[1], t[0], t[1])
			}
			f[h>>6] |= 1 << (h & 63)
			j++
			continue
		}
		// The trigrams that start in block k, in one run.
		end := min(len(t), j+(k+1)<<blockShift-p)
		for ; j < end; j++ {
			h := trigram(t[j-2], t[j-1], t[j])
			f[h>>6] |= 1 << (h & 63)
		}
	}
	switch len(t) {
	case 0:
	case 1:
		ix.tail = [2]byte{ix.tail[1], t[0]}
	default:
		ix.tail = [2]byte{t[len(t)-2], t[len(t)-1]}
	}
}

// filter is the filter that holds block k's trigrams: its own, or its
// group's once it is spilled.
func (ix *taintIndex) filter(k int) *trigramFilter {
	if f := ix.filters[k]; f != nil {
		return f
	}
	return ix.groups[k/superBlocks]
}

// find reports the first output whose normalized text contains s. With a
// store that fails, it reports no match and the error is the state's:
// a caller must not use the decision.
func (ix *taintIndex) find(s string) (Source, bool) {
	var first Source
	found := false
	ix.findEach(s, func(src Source) bool {
		first, found = src, true
		return false
	})
	return first, found
}

// findEach calls fn with every output whose normalized text contains s,
// in order, until fn returns false (an output holding s twice can come
// twice).
func (ix *taintIndex) findEach(s string, fn func(Source) bool) {
	ix.findAt(s, func(_ int, src Source) bool { return fn(src) })
}

// findAt is findEach, also telling fn where in the text each match
// starts. fn must not read the text itself (text shares a buffer with the
// scan): it may note positions and read them after.
func (ix *taintIndex) findAt(s string, fn func(int, Source) bool) {
	if len(s) > blockSize || ix.err != nil {
		ix.findSlow(s, fn)
		return
	}
	var hs [64]uint32
	grams := hs[:0]
	for p := 0; p+2 < len(s) && len(grams) < len(hs); p++ {
		grams = append(grams, trigram(s[p], s[p+1], s[p+2]))
	}
	// A string with a NUL or shorter than three bytes has no trigram to
	// filter by (a NUL one would join two outputs): every block is a
	// candidate, and the scan decides.
	filter := len(s) >= 3 && strings.IndexByte(s, 0) < 0
	a := rarest(s)
	for k := range ix.filters {
		f := ix.filter(k)
		var next *trigramFilter
		if k+1 < len(ix.filters) {
			next = ix.filter(k + 1)
		}
		if filter && !mayHold(f, next, grams) {
			continue
		}
		lo := k << blockShift
		hi := min(ix.size, lo+blockSize+len(s)-1)
		t := ix.text(lo, hi)
		if t == nil {
			return
		}
		for off := 0; off < len(t); {
			i := containsAt(t[off:], s, a)
			if i < 0 {
				break
			}
			// Outputs are joined by a NUL: a match holding one must lie
			// inside one output, not join the end of one to the next.
			// A match starting past this block is the next block's.
			p := lo + off + i
			if p >= lo+blockSize {
				break
			}
			if filter || ix.within(p, len(s)) {
				if src, ok := ix.at(p); ok && !fn(p, src) {
					return
				}
			}
			off += i + 1
		}
	}
}

// within tells whether the n bytes at pos lie inside one output's text,
// short of the NUL that ends it.
func (ix *taintIndex) within(pos, n int) bool {
	j := sort.SearchInts(ix.starts, pos+1) - 1
	end := ix.size
	if j+1 < len(ix.starts) {
		end = ix.starts[j+1]
	}
	return pos+n < end
}

// findSlow is find for a string longer than a block, which the two-block
// window cannot hold: it slides a window of a block plus the string over
// the text. Such destinations are rare (a 64 KiB "address").
func (ix *taintIndex) findSlow(s string, fn func(int, Source) bool) {
	a := rarest(s)
	if ix.err != nil {
		return
	}
	if ix.base == 0 {
		eachIn(ix.buf, s, a, len(ix.buf), func(i int) bool { return ix.report(i, fn) })
		return
	}
	var w, blk []byte
	pos, next := 0, 0 // the text position of w[0], and of w's end
	for lo := 0; lo < ix.size; lo += blockSize {
		hi := min(ix.size, lo+blockSize+len(s)-1)
		w = w[:copy(w, w[lo-pos:])]
		pos = lo
		for next < hi {
			if next >= ix.base {
				w = append(w, ix.buf[next-ix.base:]...)
				next = ix.size
				continue
			}
			if blk == nil {
				blk = make([]byte, blockSize)
			}
			if !ix.get(next>>blockShift, blk) {
				return
			}
			w = append(w, blk...)
			next += blockSize
		}
		if !eachIn(w[:hi-pos], s, a, blockSize, func(i int) bool { return ix.report(lo+i, fn) }) {
			return
		}
	}
}

// eachIn calls fn with every position below limit where s starts in t,
// until fn returns false; it reports whether fn never did.
func eachIn(t []byte, s string, a, limit int, fn func(int) bool) bool {
	for off := 0; off < len(t); {
		i := containsAt(t[off:], s, a)
		if i < 0 || off+i >= limit {
			return true
		}
		if !fn(off + i) {
			return false
		}
		off += i + 1
	}
	return true
}

// report hands fn position pos and the output whose text holds it.
func (ix *taintIndex) report(pos int, fn func(int, Source) bool) bool {
	src, ok := ix.at(pos)
	return !ok || fn(pos, src)
}

// mayHold tells whether every trigram is in f or its successor: a match
// starting in f's block can run into the next one.
func mayHold(f, next *trigramFilter, grams []uint32) bool {
	for _, h := range grams {
		w, bit := h>>6, uint64(1)<<(h&63)
		if f[w]&bit == 0 && (next == nil || next[w]&bit == 0) {
			return false
		}
	}
	return true
}

func (ix *taintIndex) at(pos int) (Source, bool) {
	if pos < 0 {
		return Source{}, false
	}
	i := sort.SearchInts(ix.starts, pos+1) - 1
	return ix.sources[i], true
}

// byteRank orders bytes by how common they are in text, most common
// first: space, then letters by English frequency, then the rest.
const byteRank = " etaoinshrdlcumwfgypbvkjxqz.,0123456789-_@/:"

// rarest picks the byte of s least likely to occur in text, so the scan
// can jump between its occurrences instead of the pattern's first byte.
func rarest(s string) int {
	best, bestRank := 0, -1
	for i := 0; i < len(s); i++ {
		r := strings.IndexByte(byteRank, s[i])
		if r < 0 {
			r = len(byteRank) // not ranked: rarer than anything ranked
		}
		if r > bestRank {
			best, bestRank = i, r
		}
	}
	return best
}

// containsAt is bytes.Index(t, s), anchored on s[a]: IndexByte skips
// through t at memory speed, and each hit is checked in place.
func containsAt(t []byte, s string, a int) int {
	if len(s) == 0 {
		return 0
	}
	c := s[a]
	fails := 0
	for pos := a; pos < len(t); {
		i := bytes.IndexByte(t[pos:], c)
		if i < 0 {
			return -1
		}
		start := pos + i - a
		if start+len(s) > len(t) {
			return -1
		}
		if string(t[start:start+len(s)]) == s {
			return start
		}
		pos += i + 1
		// Many near misses ("aaa…" in "aaa…b…") would make this
		// quadratic: bytes.Index falls back to Rabin-Karp, which is not.
		if fails++; fails > 16 && fails > pos>>4 {
			if j := bytes.Index(t[start+1:], []byte(s)); j >= 0 {
				return start + 1 + j
			}
			return -1
		}
	}
	return -1
}
