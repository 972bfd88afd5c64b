package engine

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

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
		// Only the authority is read, and no more than maxAuthority of
		// it: a run of "http://a.bc/http://a.bc/…" would otherwise be
		// scanned to its end from every "://", in time that grows with
		// the square of the output.
		end := k + 3
		for end < len(text) && end < k+3+maxAuthority && !urlEnd(text[end]) && !authorityEnd(text[end]) {
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

// maxAuthority bounds how much of a URL's authority is read for its host:
// a DNS name is at most 253 bytes, and user info beyond that is not a
// host's. The tokens in the text still index what lies past it.
const maxAuthority = 1024

// authorityEnd ends an authority for every reader: '/', '?' and '#' (a
// WHATWG reader also ends it at '\', but an RFC 3986 reader does not, so
// the authority is read up to the later end).
func authorityEnd(c byte) bool { return c == '/' || c == '?' || c == '#' }

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
	// By hand, not strings.Split: every host-like token of every output
	// comes here, and a split allocates.
	if strings.Count(h, ".") != 3 {
		return false
	}
	for range 4 {
		p, rest, _ := strings.Cut(h, ".")
		if p == "" || len(p) > 3 || !allIn(p, isDigit) {
			return false
		}
		h = rest
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHexDigit(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// allIn tells whether every byte of s is one ok takes ("" is).
func allIn(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
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
		case '@', '+', '%':
			// '_' is not refused: WHATWG clients resolve my_host.example.
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

func runeCount(s string) int {
	n := 0
	for range s {
		n++
	}
	return n
}
