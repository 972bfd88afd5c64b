package engine

import (
	"bytes"
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	unorm "golang.org/x/text/unicode/norm"
)

// Source is where a piece of tool output came from: its position in the
// session (trace line or record seq, as the caller numbers it), the server
// and the tool. Taint decisions name the Source that tainted them.
type Source struct {
	Pos    int    `json:"pos"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

func (s Source) String() string {
	return fmt.Sprintf("output of %s (event %d)", s.Tool, s.Pos)
}

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
	emails  map[string]int32
	hosts   map[string]int32

	store      BlockStore
	spillAfter int
	spilled    []int64 // the handle of each block before base
	scratch    []byte  // blocks read back, two at a time
	have       int     // the block in scratch's second half, -1 for none
	err        error   // the store's first error
}

// BlockSize is the size of the blocks a BlockStore holds.
const BlockSize = blockSize

// BlockStore keeps blocks of a session's normalized output outside the
// engine's memory. The engine does no I/O: a caller whose sessions can
// outgrow memory passes one to State.SpillTo (replay spills to a
// temporary file). Blocks are BlockSize bytes; a session's blocks are
// written once, read any number of times, and freed when it closes.
type BlockStore interface {
	// Put stores a copy of block and returns a handle to read it by.
	Put(block []byte) (int64, error)
	// Get reads the block stored under h into b.
	Get(h int64, b []byte) error
	// Free says the block under h is not needed any more.
	Free(h int64)
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
		ix.emails = map[string]int32{}
		ix.hosts = map[string]int32{}
	}
	n := Normalize(text)
	i := int32(len(ix.sources))
	// The hosts of URLs in the text, read as a client reads them from the
	// raw text: escapes, IPv6 and IPv4 forms, '_', and "ß" (which the
	// case fold would turn into "ss") are indexed where the client goes.
	urlHosts(text, func(h string) {
		if _, ok := ix.hosts[h]; !ok {
			ix.hosts[h] = i
		}
	})
	ix.sources = append(ix.sources, src)
	ix.starts = append(ix.starts, ix.size)
	ix.grams(ix.size, n)
	ix.grams(ix.size+len(n), "\x00")
	ix.appendText(n)
	ix.appendText("\x00")
	tokens(n, func(email, host string) {
		if email != "" {
			if _, ok := ix.emails[email]; !ok {
				ix.emails[strings.Clone(email)] = i
			}
		}
		if host != "" {
			if _, ok := ix.hosts[host]; !ok {
				ix.hosts[strings.Clone(host)] = i
			}
		}
	})
}

// appendText adds t to the text. With a store, it goes a block at a time,
// spilling as it goes, so that one large output does not leave buf (and
// its capacity, for the rest of the session) as large as itself.
func (ix *taintIndex) appendText(t string) {
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

// spill moves every full block of buf to the store. A block the store
// refuses stays in memory: nothing is lost, and the error is reported.
func (ix *taintIndex) spill() {
	n := 0
	for n+blockSize <= len(ix.buf) && ix.err == nil {
		h, err := ix.store.Put(ix.buf[n : n+blockSize])
		if err != nil {
			ix.err = err
			break
		}
		k := len(ix.spilled)
		ix.spilled = append(ix.spilled, h)
		n += blockSize
		// Fold the block's filter into its group's. The last two
		// trigrams that start in the block may come with the next
		// output: grams then sets them in the group's filter.
		for k/superBlocks >= len(ix.groups) {
			ix.groups = append(ix.groups, new(trigramFilter))
		}
		g := ix.groups[k/superBlocks]
		for w, bits := range ix.filters[k] {
			g[w] |= bits
		}
		ix.filters[k] = nil
	}
	ix.base += n
	ix.buf = ix.buf[:copy(ix.buf, ix.buf[n:])]
}

// release frees the blocks in the store; the index is not used after.
func (ix *taintIndex) release() {
	if ix.store != nil {
		for _, h := range ix.spilled {
			ix.store.Free(h)
		}
	}
	ix.spilled = nil
}

// text returns the text from lo to hi, reading spilled blocks back. lo is
// the start of a block and hi-lo less than two blocks; the result is valid
// until the next call. Scanning block after block reads each block once:
// the second block of one window is the first of the next.
func (ix *taintIndex) text(lo, hi int) []byte {
	if lo >= ix.base {
		return ix.buf[lo-ix.base : hi-ix.base]
	}
	if ix.scratch == nil {
		ix.scratch, ix.have = make([]byte, 2*blockSize), -1
	}
	k := lo >> blockShift
	first, second := ix.scratch[:blockSize], ix.scratch[blockSize:]
	if ix.have == k {
		copy(first, second)
	} else if !ix.get(k, first) {
		return nil
	}
	ix.have = -1
	if n := hi - lo - blockSize; n > 0 {
		if next := lo + blockSize; next >= ix.base {
			copy(second, ix.buf[next-ix.base:next-ix.base+n])
		} else {
			if !ix.get(k+1, second) {
				return nil
			}
			ix.have = k + 1
		}
	}
	return ix.scratch[:hi-lo]
}

// get reads spilled block k into b.
func (ix *taintIndex) get(k int, b []byte) bool {
	if err := ix.store.Get(ix.spilled[k], b); err != nil {
		ix.err = err
		return false
	}
	return true
}

// find reports the first output whose normalized text contains s. With a
// store that fails, it reports no match and the error is the state's:
// a caller must not use the decision.
func (ix *taintIndex) find(s string) (Source, bool) {
	if len(s) > blockSize || ix.err != nil {
		return ix.findSlow(s)
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
			return Source{}, false
		}
		for off := 0; off < len(t); {
			i := containsAt(t[off:], s, a)
			if i < 0 {
				break
			}
			// Outputs are joined by a NUL: a match holding one must lie
			// inside one output, not join the end of one to the next.
			if p := lo + off + i; filter || ix.within(p, len(s)) {
				return ix.at(p)
			}
			off += i + 1
		}
	}
	return Source{}, false
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
func (ix *taintIndex) findSlow(s string) (Source, bool) {
	a := rarest(s)
	if ix.err != nil {
		return Source{}, false
	}
	if ix.base == 0 {
		return ix.at(containsAt(ix.buf, s, a))
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
				return Source{}, false
			}
			w = append(w, blk...)
			next += blockSize
		}
		if i := containsAt(w[:hi-pos], s, a); i >= 0 {
			return ix.at(lo + i)
		}
	}
	return Source{}, false
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

// tokenByte marks the ASCII bytes that can be part of an address or host.
var tokenByte = func() (t [utf8.RuneSelf]bool) {
	for c := 0; c < utf8.RuneSelf; c++ {
		t[c] = ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || strings.IndexByte(".-_+%@", byte(c)) >= 0
	}
	return t
}()

func tokenRune(r rune) bool {
	if r < utf8.RuneSelf {
		return tokenByte[r]
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || dotRune(r) || invisibleRune(r)
}

// tokens calls fn with every email address and every host name found in
// normalized text s. A host is a dotted name whose labels are non-empty and
// whose last label has at least two characters; the domain of an email is
// a host too.
func tokens(s string, fn func(email, host string)) {
	i := 0
	for i < len(s) {
		// Skip separators quickly in the ASCII case.
		c := s[i]
		if c < utf8.RuneSelf && !tokenByte[c] {
			i++
			continue
		}
		j := i
		hasDot, hasAt := false, false
		for j < len(s) {
			c := s[j]
			if c < utf8.RuneSelf {
				if !tokenByte[c] {
					break
				}
				hasDot = hasDot || c == '.'
				hasAt = hasAt || c == '@'
				j++
				continue
			}
			r, n := utf8.DecodeRuneInString(s[j:])
			if !tokenRune(r) {
				break
			}
			hasDot = hasDot || dotRune(r)
			j += n
		}
		if j == i { // a non-ASCII separator
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
			continue
		}
		if hasDot {
			classify(s[i:j], hasAt, fn)
			if !isASCII(s[i:j]) {
				asciiRuns(s[i:j], fn)
			}
		}
		i = j
	}
}

func classify(tok string, hasAt bool, fn func(email, host string)) {
	tok = strings.TrimFunc(tok, edgeRune)
	// The trim may have taken the token's only '@' ("@john.doe"), so
	// whether it is an address is decided on what is left.
	at := -1
	if hasAt {
		at = strings.LastIndexByte(tok, '@')
	}
	if at < 0 {
		if h, ok := hostKey(tok); ok {
			fn("", h)
		}
		return
	}
	local, domain := tok[:at], tok[at+1:]
	if k := strings.LastIndexByte(local, '@'); k >= 0 {
		local = local[k+1:]
	}
	h, ok := hostKey(domain)
	if local == "" || !ok {
		return
	}
	if h == domain {
		fn(tok[len(tok)-len(local)-1-len(domain):], h)
		return
	}
	fn(local+"@"+h, h)
}

// asciiRuns classifies the ASCII runs inside a token that holds other
// letters too: text without spaces (Chinese, Japanese) glues a host to
// the words around it, "发送到evil.example网站".
func asciiRuns(tok string, fn func(email, host string)) {
	for i := 0; i < len(tok); {
		if tok[i] >= utf8.RuneSelf || !tokenByte[tok[i]] {
			i++
			continue
		}
		j, dot, at := i, false, false
		for j < len(tok) && tok[j] < utf8.RuneSelf && tokenByte[tok[j]] {
			dot, at = dot || tok[j] == '.', at || tok[j] == '@'
			j++
		}
		if dot && (i > 0 || j < len(tok)) {
			classify(tok[i:j], at, fn)
		}
		i = j
	}
}

// urlHosts calls fn with the canonical host of every web URL in text.
func urlHosts(text string, fn func(host string)) {
	for off := 0; ; {
		k := strings.Index(text[off:], "://")
		if k < 0 {
			return
		}
		k += off
		start := k
		for start > 0 && start > k-8 && isSchemeByte(text[start-1]) {
			start--
		}
		end := k + 3
		for end < len(text) && !urlEnd(text[end]) {
			end++
		}
		if u, ok := parseWebURL(text[start:end]); ok {
			fn(u.host)
		}
		off = k + 3
	}
}

func isSchemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// urlEnd ends a URL in running text: white space, quotes and brackets.
func urlEnd(c byte) bool {
	return c <= ' ' || strings.IndexByte("\"'<>`", c) >= 0
}

// edgeRune is what a token is trimmed of: punctuation that ends a
// sentence or opens a handle, and invisible characters.
func edgeRune(r rune) bool {
	return (r < utf8.RuneSelf && strings.IndexByte(".-_+%@", byte(r)) >= 0) || dotRune(r) || invisibleRune(r)
}

// hostKey is the form a host token is indexed and looked up under: the
// canonical host a client would connect to, so that "evil。example",
// "evil\u00adexample" and "evil.example" meet. A token that does not
// canonicalize is kept with its dots mapped and invisible characters
// dropped, so it still taints.
func hostKey(tok string) (string, bool) {
	if isASCII(tok) && !strings.Contains(tok, "xn--") {
		if endsInNumber(tok) {
			// Only four parts make an address in running text: "v1.5"
			// is a version, not 1.0.0.5.
			if strings.Count(tok, ".") != 3 {
				return "", false
			}
			return parseIPv4(tok)
		}
		return tok, hostLike(tok)
	}
	if h, ok := canonicalHost(tok, false); ok && hostLike(h) {
		return h, true
	}
	h := strings.Map(func(r rune) rune {
		switch {
		case dotRune(r):
			return '.'
		case invisibleRune(r):
			return -1
		}
		return r
	}, tok)
	return h, hostLike(h)
}

// ipv4 tells whether h is a dotted-quad IPv4 address: a host too, though
// its last label is a number.
func ipv4(h string) bool {
	parts := strings.Split(h, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

func hostLike(h string) bool {
	if ipv4(h) {
		return true
	}
	last := -1
	for i := 0; i < len(h); i++ {
		switch h[i] {
		case '@', '_', '+', '%':
			return false
		case '.':
			if i == last+1 {
				return false // empty label
			}
			last = i
		}
	}
	return last >= 1 && len(h)-last-1 >= 2
}

// destPattern is one trusted_destinations entry, parsed.
type destPattern struct {
	raw   string
	kind  destKind
	value string // exact: normalized value; domain: the canonical domain; glob: the host glob
	// A URL prefix, parsed as written and normalized: a destination must
	// fall under both.
	prefix, prefixNorm webURL
}

type destKind uint8

const (
	destExact destKind = iota
	destDomain
	destURLPrefix
	destHostGlob
)

func compileDest(d string) (destPattern, error) {
	n := Normalize(d)
	dp := destPattern{raw: d, value: n}
	switch {
	case n == "":
		return dp, fmt.Errorf("empty trusted destination")
	case strings.HasPrefix(n, "@"):
		dp.kind = destDomain
		h, ok := canonicalHost(strings.TrimSuffix(n[1:], "."), false)
		if !ok || !hostLike(h) {
			return dp, fmt.Errorf("trusted destination %q: %q is not a domain", d, n[1:])
		}
		dp.value = h
	case strings.Contains(n, "://"):
		u, ok := parseWebURL(d)
		un, okn := parseWebURL(n)
		if !ok || !okn || u.user || u.query || u.frag || (u.scheme != "http" && u.scheme != "https") ||
			u.host != un.host || u.port != un.port || !strings.HasPrefix(strings.ToLower(d), u.scheme+"://") {
			return dp, fmt.Errorf("trusted destination %q: a URL prefix needs http(s)://host/path and no user, query or fragment", d)
		}
		dp.kind = destURLPrefix
		dp.prefix, dp.prefixNorm = u, un
	case strings.ContainsAny(n, "*?"):
		dp.kind = destHostGlob
		if strings.ContainsAny(n, "/@ ") {
			return dp, fmt.Errorf("trusted destination %q: a host glob names hosts only, like *.example.com", d)
		}
		if err := checkGlob(n); err != nil {
			return dp, err
		}
	}
	return dp, nil
}

// target is where a destination really goes, read from the value as the
// agent sent it (raw) and as normalized (norm): the kind, and for a URL or
// an address its canonical host. ok is false when the two readings
// disagree on where it goes, or it is a URL with userinfo: such a
// destination is never trusted, because the client sending it reads the
// raw value, not the normalized one.
type target struct {
	ok    bool
	url   bool
	web   webURL // raw reading of a URL
	webN  webURL // normalized reading
	email string // normalized single address
	host  string // canonical host of a URL or an address
}

func targetOf(raw, norm string) target {
	ur, okr := parseWebURL(raw)
	un, okn := parseWebURL(norm)
	if okr || okn || strings.Contains(norm, "://") {
		t := target{url: true, web: ur, webN: un, host: ur.host}
		t.ok = okr && okn && !ur.user && !un.user && ur.scheme == un.scheme && ur.host == un.host && ur.port == un.port &&
			!listLike(raw) && strings.Count(norm, "://") == 1
		return t
	}
	if e, ok := singleEmail(norm); ok {
		re, rok := singleEmail(raw)
		if !rok {
			return target{}
		}
		h, hok := canonicalHost(emailDomain(e), false)
		rd := emailDomain(re)
		rh, rhok := canonicalHost(rd, false)
		// Mail clients do not all map a domain with UTS-46: one that is
		// trusted must be written as it is (no invisible or compatibility
		// characters), so that every client reads the same domain.
		plain := unorm.NFKC.IsNormalString(rd) && !strings.ContainsFunc(rd, invisibleRune)
		return target{ok: hok && rhok && h == rh && plain, email: e, host: h}
	}
	// Not a URL or an address in either reading: a channel id, a phone
	// number, a name. It is matched as normalized text.
	return target{ok: !strings.Contains(raw, "://") && strings.Count(raw, "@") == strings.Count(norm, "@")}
}

// listLike tells whether a URL value has white space inside it, where a
// tool could split it into a list of URLs. (A second "://" is refused
// too, which catches "a,b" lists; a lone comma is common in queries.)
func listLike(s string) bool {
	return strings.ContainsFunc(strings.TrimSpace(s), unicode.IsSpace)
}

// matches tells whether a destination (t, read from its raw value and the
// normalized d) is trusted by the pattern. URLs and addresses are parsed
// as the client parses them, never substring-matched, so
// "https://evil.example/?x=irs.gov" is not under *.irs.gov and
// "https://api.corp.example／v1／x@evil.example/" goes to evil.example.
func (dp *destPattern) matches(t *target, d string) bool {
	if !t.ok {
		return false
	}
	switch dp.kind {
	case destExact:
		return d == dp.value
	case destDomain:
		return t.email != "" && t.host == dp.value
	case destURLPrefix:
		return t.url && underPrefix(&t.web, &dp.prefix) && underPrefix(&t.webN, &dp.prefixNorm)
	case destHostGlob:
		return t.host != "" && !strings.HasPrefix(t.host, "[") && matchGlob(dp.value, t.host)
	}
	return false
}

// underPrefix: same scheme, host and port, and a path that stays under the
// prefix's once escapes are decoded and dot segments collapsed.
func underPrefix(u, prefix *webURL) bool {
	if u.scheme != prefix.scheme || u.host != prefix.host || u.port != prefix.port {
		return false
	}
	// The path must stay under the prefix both as a WHATWG client sends
	// it (empty segments kept, so "a//.." is "a/") and as a server that
	// decodes escapes and collapses slashes may read it.
	p, ok := cleanURLPath(u.path)
	pp, pok := cleanURLPath(prefix.path)
	if !ok || !pok || !pathUnder(p, pp) {
		return false
	}
	return pathUnder(webPath(u.path), webPath(prefix.path))
}

func pathUnder(p, pp string) bool {
	if strings.HasSuffix(pp, "/") {
		return strings.HasPrefix(p+"/", pp)
	}
	return p == pp || strings.HasPrefix(p, pp+"/")
}

// webPath resolves dot segments as a WHATWG URL parser does: "." and ".."
// (also written %2e) are segments of their own, and empty segments stay.
func webPath(p string) string {
	var segs []string
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range parts {
		last := i == len(parts)-1
		switch strings.ToLower(s) {
		case "..", ".%2e", "%2e.", "%2e%2e":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
			if last {
				segs = append(segs, "")
			}
		case ".", "%2e":
			if last {
				segs = append(segs, "")
			}
		default:
			segs = append(segs, s)
		}
	}
	return "/" + strings.Join(segs, "/")
}

// cleanURLPath decodes escapes (so %2e%2e is a dot segment and %2f a
// slash, whichever the server makes of them) and collapses dot segments.
func cleanURLPath(p string) (string, bool) {
	p, ok := percentDecode(p)
	if !ok {
		return "", false
	}
	if p == "" {
		return "/", true
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c, true
}

// singleEmail recognises a destination that is exactly one address: bare,
// "mailto:addr", or "Name <addr>".
func singleEmail(d string) (string, bool) {
	if len(d) >= 7 && strings.EqualFold(d[:7], "mailto:") {
		d = d[7:]
	}
	if i := strings.IndexByte(d, '<'); i >= 0 && strings.HasSuffix(d, ">") {
		if strings.ContainsAny(d[:i], "<>@,;") {
			return "", false
		}
		d = d[i+1 : len(d)-1]
	}
	at := strings.IndexByte(d, '@')
	if at <= 0 || strings.Count(d, "@") != 1 || strings.ContainsAny(d, " ,;<>()\"'/:?") {
		return "", false
	}
	if !hostLike(strings.TrimSuffix(d[at+1:], ".")) {
		return "", false
	}
	return d, true
}

func emailDomain(e string) string {
	return strings.TrimSuffix(e[strings.IndexByte(e, '@')+1:], ".")
}

// isDestinationName lists argument names that hold where data goes. They
// are compared after lower-casing and dropping '_', '-' and '.'. A switch
// rather than a map: this runs for every argument of every gated call.
func isDestinationName(k string) bool {
	switch k {
	case "to", "cc", "bcc", "replyto", "recipient", "recipients",
		"email", "emails", "emailaddress", "address", "addresses",
		"url", "urls", "uri", "href", "link", "endpoint",
		"webhook", "webhookurl", "callback", "callbackurl",
		"channel", "channels", "channelid", "chatid",
		"phone", "phonenumber", "destination", "dest", "target",
		"host", "hostname", "server", "domain",
		"owner", "repo", "repository":
		return true
	}
	return false
}

// destinationSuffixes catch compound names such as target_url or user_email.
var destinationSuffixes = []string{"url", "uri", "email", "emails", "webhook", "recipient", "recipients", "address", "channel", "channelid"}

// DestinationShaped tells whether an argument name looks like a destination.
func DestinationShaped(name string) bool {
	var b [64]byte
	n := 0
	for i := 0; i < len(name) && n < len(b); i++ {
		c := name[i]
		switch {
		case c == '_' || c == '-' || c == '.':
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		b[n] = c
		n++
	}
	if isDestinationName(string(b[:n])) {
		return true
	}
	for _, s := range destinationSuffixes {
		if n >= len(s) && string(b[n-len(s):n]) == s {
			return true
		}
	}
	return false
}
