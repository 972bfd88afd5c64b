package engine

import (
	"bytes"
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
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
// of every output in one buffer, for substring matching, and the email
// addresses and hosts seen in it, indexed as the output arrives, so that
// the common case (an email or URL destination) is a map lookup whatever
// the session's size. Substring matching is narrowed by a trigram filter
// per 64 KiB block of the buffer, so a search touches only the blocks that
// could hold the destination.
type taintIndex struct {
	sources []Source
	starts  []int  // where each source's text starts in buf
	buf     []byte // normalized texts, each followed by a NUL
	filters []*trigramFilter
	emails  map[string]int32
	hosts   map[string]int32
}

const (
	blockShift = 16 // 64 KiB blocks
	blockSize  = 1 << blockShift
	filterBits = 1 << 16
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
	ix.sources = append(ix.sources, src)
	start := len(ix.buf)
	ix.starts = append(ix.starts, start)
	ix.buf = append(ix.buf, n...)
	ix.buf = append(ix.buf, 0)
	for p := max(start-2, 0); p+2 < len(ix.buf); p++ {
		k := p >> blockShift
		for k >= len(ix.filters) {
			ix.filters = append(ix.filters, new(trigramFilter))
		}
		h := trigram(ix.buf[p], ix.buf[p+1], ix.buf[p+2])
		ix.filters[k][h>>6] |= 1 << (h & 63)
	}
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

// find reports the first output whose normalized text contains s.
func (ix *taintIndex) find(s string) (Source, bool) {
	if len(s) < 3 || len(s) > blockSize || strings.IndexByte(s, 0) >= 0 {
		return ix.at(containsAt(ix.buf, s, rarest(s)))
	}
	var hs [64]uint32
	grams := hs[:0]
	for p := 0; p+2 < len(s) && len(grams) < len(hs); p++ {
		grams = append(grams, trigram(s[p], s[p+1], s[p+2]))
	}
	a := rarest(s)
	for k, f := range ix.filters {
		var next *trigramFilter
		if k+1 < len(ix.filters) {
			next = ix.filters[k+1]
		}
		if !mayHold(f, next, grams) {
			continue
		}
		lo := k << blockShift
		hi := min(len(ix.buf), lo+blockSize+len(s)-1)
		if i := containsAt(ix.buf[lo:hi], s, a); i >= 0 {
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
		t.ok = okr && okn && !ur.user && !un.user && ur.scheme == un.scheme && ur.host == un.host && ur.port == un.port
		return t
	}
	if e, ok := singleEmail(norm); ok {
		re, rok := singleEmail(raw)
		if !rok {
			return target{}
		}
		h, hok := canonicalHost(emailDomain(e), false)
		rh, rhok := canonicalHost(emailDomain(re), false)
		return target{ok: hok && rhok && h == rh, email: e, host: h}
	}
	// Not a URL or an address in either reading: a channel id, a phone
	// number, a name. It is matched as normalized text.
	return target{ok: !strings.Contains(raw, "://") && strings.Count(raw, "@") == strings.Count(norm, "@")}
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
