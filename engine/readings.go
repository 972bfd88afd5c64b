package engine

import (
	"fmt"
	"mime"
	"net/netip"
	"net/url"
	"strings"
)

// A destination is trusted only where every reader a real consumer could
// apply sends it to the same place. This file holds the readers beside
// the WHATWG one (dest.go): RFC 6068 and RFC 5322 for mail, RFC 3986
// (Go's net/url, as curl and Python split) for URLs, and the servers that
// read ';' parameters out of a path. A reading that fails, or one that
// disagrees with another, leaves the value untrusted, with the
// disagreement as the reason.

// rfcDisagrees compares the WHATWG reading w of raw with an RFC 3986
// reading (Go's net/url, as curl and Python's urllib split a URL): scheme,
// host, port and user info must agree. It returns the disagreement, or "".
func rfcDisagrees(raw string, w *webURL) string {
	s := strings.TrimFunc(raw, func(r rune) bool { return r <= ' ' })
	if i := strings.Index(s, "://"); i >= 0 {
		auth := s[i+3:]
		if k := strings.IndexAny(auth, "/?#"); k >= 0 {
			auth = auth[:k]
		}
		if strings.Contains(auth, `\`) {
			return `it has a backslash before its path, where WHATWG readers end the host and RFC 3986 readers do not`
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return "an RFC 3986 reader (Go's net/url) refuses it"
	}
	host := u.Hostname()
	if strings.HasPrefix(u.Host, "[") {
		host = "[" + host + "]"
	}
	h, ok := canonicalHost(host, false)
	port, pok := canonicalPort(u.Port(), w.scheme)
	switch {
	case u.Opaque != "" || strings.ToLower(u.Scheme) != w.scheme:
		return "RFC 3986 and WHATWG readers disagree on its scheme"
	case u.User != nil:
		return "an RFC 3986 reader finds user info in it"
	case !ok || h != w.host:
		return "RFC 3986 and WHATWG readers disagree on its host"
	case ipv4(h) && host != h:
		// WHATWG reads 0x7f.1 and 2130706433 as 127.0.0.1; Go's
		// resolver and others look them up as names.
		return "it writes the IP address " + h + " in a form some readers look up as a name"
	case !pok || port != w.port:
		return "RFC 3986 and WHATWG readers disagree on its port"
	}
	return ""
}

// pathTrick names what in a URL path makes servers read it apart, so that
// it is never trusted under a URL prefix: an encoded '/' or '\' (a
// separator to some servers, a character to others), an encoded dot
// segment, and a ';' parameter on an empty or dot segment, which Tomcat,
// Jetty and Spring strip before resolving ("..;" climbs like ".."). A
// server or proxy may decode more than once ("%252e%252e" is ".." to
// one that does), so each decoding is read the same way.
func pathTrick(p string) string {
	dots := dotSegments(p)
	for n := 0; n < 4; n++ {
		low := strings.ToLower(p)
		if strings.Contains(low, "%2f") || strings.Contains(low, "%5c") {
			return "its path holds an encoded '/' or '\\', a separator to some servers and not to others"
		}
		for seg := range strings.SplitSeq(p, "/") {
			if k := strings.IndexByte(seg, ';'); k >= 0 {
				if bare := lenientDecode(seg[:k]); bare == "" || bare == "." || bare == ".." {
					return fmt.Sprintf("its path has the segment %q, which servers that strip ';' parameters read as %q", seg, bare)
				}
			}
		}
		d := lenientDecode(p)
		if d == p {
			return ""
		}
		if dotSegments(d) > dots {
			return "its path has a percent-encoded dot segment, which a server that decodes it resolves"
		}
		p = d
	}
	return "its path is percent-encoded more times than bailiff reads"
}

// dotSegments counts the "." and ".." segments of p as written.
func dotSegments(p string) int {
	n := 0
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			n++
		}
	}
	return n
}

// decodedForms calls fn with each other form in which a reader finds
// addresses and hosts in normalized value d, until fn returns false: the
// text percent-decoded (a mail client reading a mailto URI, a server its
// path), MIME encoded words decoded, and the text before each '@' (a
// mail system that routes on the first '@' of "a@evil.example@corp.example").
func decodedForms(d string, fn func(string) bool) {
	x := d
	for i := 0; i < 4 && strings.Contains(x, "%"); i++ {
		x = Normalize(lenientDecode(x))
		if !fn(x) {
			return
		}
	}
	if strings.Contains(d, "=?") {
		if h, err := new(mime.WordDecoder).DecodeHeader(d); err == nil && h != d {
			if !fn(Normalize(h)) {
				return
			}
		}
	}
	if strings.Count(d, "@") > 1 {
		for k, n := 0, 0; n < 8; n++ {
			i := strings.IndexByte(d[k:], '@')
			if i < 0 {
				return
			}
			k += i
			if !fn(d[:k]) {
				return
			}
			k++
		}
	}
}

// lenientDecode decodes %XX escapes as WHATWG's percent-decode does: an
// escape that is not two hex digits stays as written, so one bad escape
// cannot hide the good ones.
func lenientDecode(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHexDigit(s[i+1]) && isHexDigit(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func unhex(c byte) byte {
	switch {
	case isDigit(c):
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// untrustedWhy is why destination d (t read from it) is not trusted: its
// readings disagree; or the recipient of several that no entry trusts; or
// its path is one servers read apart and a URL prefix would otherwise
// hold it. "" when there is nothing more to say than that no entry
// trusts it.
func untrustedWhy(ct *contract, t *target, d, self string) string {
	if !t.ok {
		return t.why
	}
	if len(t.emails) > 1 || len(t.emails) == 1 && t.emails[0] != d {
		for i, e := range t.emails {
			one := target{ok: true, email: e, host: t.hosts[i], emails: t.emails[i : i+1], hosts: t.hosts[i : i+1]}
			if !trustedBy(ct, &one, e, self) {
				return fmt.Sprintf("its recipient %q is not trusted", e)
			}
		}
	}
	if t.trick == "" {
		return ""
	}
	plain := *t
	plain.trick = ""
	if trustedBy(ct, &plain, d, self) {
		return t.trick
	}
	return ""
}

// trustedBy tells whether an entry of ct trusts destination d (t read
// from it); self is the principal's address, for the "principal" entry.
func trustedBy(ct *contract, t *target, d, self string) bool {
	for i := range ct.trusted {
		if ct.trusted[i].matches(t, d, self) {
			return true
		}
	}
	return false
}

// unmapped is the IPv4 address an IPv4-mapped IPv6 host ([::ffff:a01:203])
// reaches, where a client connects: "" for any other host.
func unmapped(h string) string {
	if !strings.HasPrefix(h, "[") || !strings.HasSuffix(h, "]") {
		return ""
	}
	a, err := netip.ParseAddr(h[1 : len(h)-1])
	if err != nil || !a.Is4In6() {
		return ""
	}
	return a.Unmap().String()
}

// principalAddress is the principal's address as destinations are
// compared: normalized, and "" unless every reader finds exactly one
// plain address in it (a list or a URL trusts nothing).
func principalAddress(e string) string {
	n := Normalize(e)
	if n == "" {
		return ""
	}
	t := targetOf(e, n)
	if !t.ok || t.url || len(t.emails) != 1 || t.emails[0] != n {
		return ""
	}
	return n
}

// CheckPrincipalEmail refuses a principal email that trusts nothing: one
// that is not exactly one plain address to every reader.
func CheckPrincipalEmail(e string) error {
	if e != "" && principalAddress(e) == "" {
		return fmt.Errorf("principal email %q is not one plain address such as ana@corp.example (no name, list, URL or routing)", e)
	}
	return nil
}
