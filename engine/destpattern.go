package engine

import (
	"fmt"
	"path"
	"strings"
	"unicode"
)

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
	destRegDomain
	destPrincipal // the session principal's own address
)

func compileDest(d string) (destPattern, error) {
	n := Normalize(d)
	dp := destPattern{raw: d, value: n}
	switch {
	case n == "":
		return dp, fmt.Errorf("empty trusted destination")
	case n == "principal":
		dp.kind = destPrincipal
	case strings.HasPrefix(n, "domain:"):
		// One entry for ups.com and every name under it, which a host
		// glob cannot say (*.ups.com does not match ups.com). Only a
		// registrable domain: "domain:github.io" would trust every
		// stranger's site under a public suffix.
		dp.kind = destRegDomain
		h, ok := canonicalHost(strings.TrimSuffix(strings.TrimSpace(n[len("domain:"):]), "."), false)
		if !ok || !hostLike(h) || strings.Trim(h, "abcdefghijklmnopqrstuvwxyz0123456789-.") != "" || registrable(h) != h {
			return dp, fmt.Errorf("trusted destination %q: domain: takes a registrable domain, like domain:ups.com (not a public suffix, a subdomain or an IP address)", d)
		}
		dp.value = h
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
// agent sent it (raw) and as normalized (norm), by every reader a
// consumer could apply (readings.go): the kind, and for a URL or mail the
// canonical hosts. ok is false when two readings disagree on where it
// goes, a reading fails, or it is a URL with userinfo: such a destination
// is never trusted, and why says which.
type target struct {
	ok     bool
	why    string
	url    bool
	web    webURL   // raw reading of a URL
	webN   webURL   // normalized reading
	trick  string   // what keeps a URL's path from being trusted under a prefix
	email  string   // the one recipient, when mail has exactly one
	host   string   // canonical host of a URL or of the one recipient
	emails []string // every recipient, normalized
	hosts  []string // canonical host of the URL, or of each recipient
}

func targetOf(raw, norm string) target {
	ur, okr := parseWebURL(raw)
	un, okn := parseWebURL(norm)
	if okr || okn || strings.Contains(norm, "://") {
		t := target{url: true, web: ur, webN: un, host: ur.host, hosts: []string{ur.host}}
		switch {
		case !okr || !okn:
			t.why = "a WHATWG reader cannot read it as a web URL, as sent or normalized"
		case ur.user || un.user:
			t.why = "it carries user info, and readers disagree on where the host starts"
		case ur.scheme != un.scheme || ur.host != un.host || ur.port != un.port:
			t.why = fmt.Sprintf("it goes to %s as sent and to %s once normalized", ur.host, un.host)
		case listLike(raw):
			t.why = "it holds white space, where a tool could split it into several URLs"
		case strings.Count(norm, "://") > 1:
			t.why = "it holds a second URL"
		case !strings.Contains(norm, "://"):
			t.why = "it does not write \"//\" after its scheme, which readers complete differently"
		default:
			t.why = rfcDisagrees(raw, &ur)
		}
		t.ok = t.why == ""
		t.trick = pathTrick(ur.path)
		return t
	}
	if mailShaped(norm) {
		return mailTarget(raw, norm)
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
func (dp *destPattern) matches(t *target, d, self string) bool {
	if !t.ok {
		return false
	}
	switch dp.kind {
	case destPrincipal:
		return self != "" && !t.url && every(t.emails, func(e string) bool { return e == self })
	case destExact:
		return d == dp.value || len(t.emails) > 0 && every(t.emails, func(e string) bool { return e == dp.value })
	case destDomain:
		return len(t.emails) > 0 && every(t.hosts, func(h string) bool { return h == dp.value })
	case destURLPrefix:
		return t.url && t.trick == "" && underPrefix(&t.web, &dp.prefix) && underPrefix(&t.webN, &dp.prefixNorm)
	case destHostGlob:
		return every(t.hosts, func(h string) bool { return !strings.HasPrefix(h, "[") && matchGlob(dp.value, h) })
	case destRegDomain:
		// Compared as DNS reads names: by labels, so evil-ups.com and
		// ups.com.evil.example are not under ups.com. And the host's own
		// registrable domain must be D: under a private suffix inside
		// it (s3.amazonaws.com under amazonaws.com) every name is a
		// stranger's site.
		return every(t.hosts, func(h string) bool {
			h = strings.TrimSuffix(h, ".")
			return (h == dp.value || strings.HasSuffix(h, "."+dp.value)) && registrable(h) == dp.value
		})
	}
	return false
}

// every tells whether each of hs (at least one: hosts or recipients)
// passes ok: a value is trusted only when each place it goes is.
func every(hs []string, ok func(string) bool) bool {
	for _, h := range hs {
		if h == "" || !ok(h) {
			return false
		}
	}
	return len(hs) > 0
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

// destinationShaped tells whether an argument name looks like a destination.
func destinationShaped(name string) bool {
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
