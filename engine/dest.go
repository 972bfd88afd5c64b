package engine

import (
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// webURL is a URL split the way a WHATWG URL parser splits it: Node's
// http and fetch, axios, browsers. The structure comes from ASCII
// delimiters in the text as the client receives it, so a full-width
// "／" is part of the authority, not a path separator, however it
// normalizes.
type webURL struct {
	scheme  string // lower case: http, https, ws or wss
	user    bool   // the authority holds userinfo (anything before an '@')
	rawHost string // the host as written
	host    string // canonical: UTS-46 ASCII, IPv4 dotted decimal, or [v6]
	port    string // explicit port; "" for the scheme's default
	path    string // as written, '\' read as '/'
	query   bool
	frag    bool
}

var defaultPort = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443"}

// hostProfile maps a host the way WHATWG's "domain to ASCII" does: UTS-46
// non-transitional processing (ideographic full stops become dots,
// ignorable code points vanish, case folds) without the STD3 or hyphen
// restrictions, which WHATWG clients do not apply either.
var hostProfile = idna.New(idna.MapForLookup(), idna.Transitional(false), idna.StrictDomainName(false),
	idna.CheckHyphens(false), idna.CheckJoiners(true), idna.BidiRule())

// parseWebURL parses s as an absolute http(s) or ws(s) URL. It reports
// false for anything else, and for anything a WHATWG parser would reject.
func parseWebURL(s string) (webURL, bool) {
	var u webURL
	// Leading and trailing C0 controls and spaces are stripped, and tabs
	// and newlines anywhere are removed, before parsing.
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, s)
	}
	colon := strings.IndexByte(s, ':')
	if colon <= 0 || !validScheme(s[:colon]) {
		return u, false
	}
	u.scheme = strings.ToLower(s[:colon])
	if _, ok := defaultPort[u.scheme]; !ok {
		return u, false
	}
	rest := strings.TrimLeft(s[colon+1:], `/\`)
	end := strings.IndexAny(rest, `/\?#`)
	if end < 0 {
		end = len(rest)
	}
	auth, tail := rest[:end], rest[end:]
	// curl and Python's urllib end the authority at '/', '?' and '#'
	// only: for them an '@' after a backslash starts the host. A URL
	// read either way with userinfo is one with userinfo.
	rfcAuth := rest
	if k := strings.IndexAny(rest, "/?#"); k >= 0 {
		rfcAuth = rest[:k]
	}
	if strings.Contains(rfcAuth, "@") {
		u.user = true
	}
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		u.user = true
		auth = auth[at+1:]
	}
	hostPart, port, ok := splitHostPort(auth)
	if !ok {
		return u, false
	}
	if u.port, ok = canonicalPort(port, u.scheme); !ok {
		return u, false
	}
	u.rawHost = hostPart
	host, ok := canonicalHost(hostPart, true)
	if !ok {
		return u, false
	}
	u.host = host
	if q := strings.IndexByte(tail, '#'); q >= 0 {
		u.frag = true
		tail = tail[:q]
	}
	if q := strings.IndexByte(tail, '?'); q >= 0 {
		u.query = true
		tail = tail[:q]
	}
	u.path = strings.ReplaceAll(tail, `\`, "/")
	if u.path == "" {
		u.path = "/"
	}
	return u, true
}

// splitHostPort splits an authority (userinfo removed) into its host and
// port, an IPv6 literal keeping its brackets; anything but a port after
// the brackets is no URL.
func splitHostPort(auth string) (host, port string, ok bool) {
	host = auth
	if !strings.HasPrefix(auth, "[") {
		if i := strings.IndexByte(auth, ':'); i >= 0 {
			host, port = auth[:i], auth[i+1:]
		}
	} else if i := strings.IndexByte(auth, ']'); i >= 0 {
		host = auth[:i+1]
		switch r := auth[i+1:]; {
		case r == "":
		case r[0] == ':':
			port = r[1:]
		default:
			return "", "", false
		}
	}
	return host, port, true
}

// canonicalPort is port as a client connects to it: decimal without
// leading zeros, and "" for the scheme's default.
func canonicalPort(port, scheme string) (string, bool) {
	if port == "" {
		return "", true
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || strings.Trim(port, "0123456789") != "" {
		return "", false
	}
	port = strconv.FormatUint(n, 10)
	if port == defaultPort[scheme] {
		port = ""
	}
	return port, true
}

func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// canonicalHost gives the form of a host that every client reaching it
// agrees on: an IPv6 literal compressed, an IPv4 address in any of the
// forms WHATWG accepts (decimal, octal, hex, fewer than four parts) as a
// dotted quad, and a name in UTS-46 ASCII form without a trailing dot.
// percent says whether %XX escapes are decoded first, as they are in a
// URL's host. It reports false for what a WHATWG parser would refuse.
func canonicalHost(h string, percent bool) (string, bool) {
	if h == "" {
		return "", false
	}
	if strings.HasPrefix(h, "[") {
		if !strings.HasSuffix(h, "]") {
			return "", false
		}
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", false
		}
		return "[" + a.String() + "]", true
	}
	if percent && strings.IndexByte(h, '%') >= 0 {
		d, ok := percentDecode(h)
		if !ok {
			return "", false
		}
		h = d
	}
	if !utf8.ValidString(h) {
		return "", false
	}
	a, err := hostProfile.ToASCII(h)
	if err != nil || a == "" {
		return "", false
	}
	if a != h && strings.Contains(a, "xn--") {
		// Punycode the profile makes but would refuse to read back (a
		// label past what it decodes) is no host every reader agrees on.
		if b, err := hostProfile.ToASCII(a); err != nil || b != a {
			return "", false
		}
	}
	for i := 0; i < len(a); i++ {
		if forbiddenHostByte(a[i]) {
			return "", false
		}
	}
	if endsInNumber(a) {
		return parseIPv4(a)
	}
	a = strings.TrimSuffix(a, ".")
	if a == "" || strings.Contains(a, "..") || strings.HasPrefix(a, ".") || strings.HasSuffix(a, ".") {
		return "", false
	}
	return a, true
}

func forbiddenHostByte(c byte) bool {
	return c <= ' ' || c == 0x7f || strings.IndexByte("#%/:<>?@[\\]^|", c) >= 0
}

func percentDecode(s string) (string, bool) {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b = append(b, byte(n))
		i += 2
	}
	return string(b), true
}

// endsInNumber is WHATWG's test for a host that must parse as IPv4.
func endsInNumber(h string) bool {
	// The last label, ignoring one trailing dot, found without splitting
	// the host: this runs for every host-like token.
	h = strings.TrimSuffix(h, ".")
	last := h[strings.LastIndexByte(h, '.')+1:]
	if last != "" && allIn(last, isDigit) {
		return true
	}
	if len(last) >= 2 && (last[:2] == "0x" || last[:2] == "0X") {
		return allIn(last[2:], isHexDigit)
	}
	return false
}

// parseIPv4 reads an address as WHATWG's IPv4 parser does: up to four
// parts, each decimal, octal (leading 0) or hex (0x), the last filling
// the bytes left. 0x7f.1 and 2130706433 are both 127.0.0.1.
func parseIPv4(h string) (string, bool) {
	parts := strings.Split(strings.TrimSuffix(h, "."), ".")
	if len(parts) > 4 {
		return "", false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
			p, base = p[2:], 16
		case len(p) >= 2 && p[0] == '0':
			p, base = p[1:], 8
		case p == "":
			return "", false
		}
		if p == "" {
			nums[i] = 0
			continue
		}
		n, err := strconv.ParseUint(p, base, 64)
		if err != nil || n > 1<<32 {
			return "", false
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return "", false
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return "", false
	}
	v |= last
	return strconv.Itoa(int(v>>24)) + "." + strconv.Itoa(int(v>>16&255)) + "." +
		strconv.Itoa(int(v>>8&255)) + "." + strconv.Itoa(int(v&255)), true
}

// dotRune tells whether r separates host labels: UTS-46 maps the
// ideographic and full-width full stops to '.'.
func dotRune(r rune) bool {
	return r == '.' || r == '\u3002' || r == '\uff0e' || r == '\uff61'
}

// invisibleRune marks format characters (soft hyphen, zero-width space
// and joiners, BOM, bidi controls) and variation selectors: a host
// written with one inside still resolves to the host without it, so
// they must not split a token.
func invisibleRune(r rune) bool {
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) || r == '\u034f'
}
