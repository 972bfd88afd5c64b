package engine

import (
	"net/mail"
	"strconv"
	"strings"
	"unicode/utf8"

	unorm "golang.org/x/text/unicode/norm"
)

// mailReading is the recipients a mail destination holds, each as
// written, or why it cannot be trusted.
type mailReading struct {
	addrs []string
	why   string
}

// mailShaped tells whether a normalized value is meant as mail: a mailto
// URI, or text holding an address.
func mailShaped(norm string) bool {
	if hasMailto(norm) {
		return true
	}
	found := false
	tokens(norm, func(e, _ string) { found = found || e != "" })
	return found
}

func hasMailto(s string) bool {
	return len(s) >= 7 && strings.EqualFold(s[:7], "mailto:")
}

// readMail reads s as its consumers do. A mailto URI is read as RFC 6068
// reads it: the path percent-decoded and split on ',', and the to, cc and
// bcc header fields added. Anything else is an RFC 5322 address list:
// bare addresses, "Name <addr>", groups. Each list is read twice, by a
// strict reader of bailiff's own and by Go's net/mail, and the two must
// find the same addresses.
func readMail(s string) mailReading {
	if !hasMailto(s) {
		return readList(s)
	}
	rest := s[len("mailto:"):]
	if strings.ContainsFunc(rest, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		// A URI reader (Go's net/url among them) refuses a control
		// character, and a client that does falls back to reading the
		// whole value as an address: not where its fields say.
		return mailReading{why: "its mailto URI holds a control character, which URI readers refuse"}
	}
	path, query, _ := strings.Cut(rest, "?")
	if strings.Contains(query, ";") {
		// Perl's URI::mailto splits header fields on ';' as well as '&':
		// "?subject=x;cc=evil" is a cc to it, a subject to others.
		return mailReading{why: "its mailto fields hold ';', which some readers split fields on"}
	}
	if strings.ContainsAny(rest, "#") {
		return mailReading{why: "a mailto URI with '#' is read differently by different mail clients"}
	}
	if strings.Contains(path, "%") {
		// RFC 6068 readers decode the path, naive ones do not: with
		// %40 or %2C the two find different recipients.
		return mailReading{why: "its mailto path is percent-encoded, so readers that decode it and readers that do not find different recipients"}
	}
	var r mailReading
	if path != "" {
		r = readList(path)
		if r.why != "" {
			return r
		}
	}
	for f := range strings.SplitSeq(query, "&") {
		name, value, _ := strings.Cut(f, "=")
		name, ok := percentDecode(name)
		if !ok {
			return mailReading{why: "a mailto header name is not valid percent-encoding"}
		}
		switch strings.ToLower(name) {
		case "to", "cc", "bcc":
		default:
			continue
		}
		if strings.Contains(value, "+") {
			// A form decoder (Python's parse_qs) reads '+' as a space.
			return mailReading{why: "a mailto " + name + " field holds '+', which form decoders read as a space"}
		}
		v, ok := percentDecode(value)
		if !ok || !utf8.ValidString(v) {
			return mailReading{why: "a mailto " + name + " field is not valid percent-encoding"}
		}
		h := readList(v)
		if h.why != "" {
			return h
		}
		r.addrs = append(r.addrs, h.addrs...)
	}
	if len(r.addrs) == 0 {
		return mailReading{why: "the mailto URI names no recipient"}
	}
	return r
}

// readList reads an RFC 5322 address list strictly, and checks that Go's
// net/mail finds the same addresses in the same order.
func readList(s string) mailReading {
	addrs, why := strictList(s)
	if why != "" {
		return mailReading{why: why}
	}
	got, err := mail.ParseAddressList(s)
	if err != nil {
		return mailReading{why: "an RFC 5322 reader (Go's net/mail) refuses it: " + strings.TrimPrefix(err.Error(), "mail: ")}
	}
	if len(got) != len(addrs) {
		return mailReading{why: "RFC 5322 readers disagree on how many recipients it holds"}
	}
	for i, a := range got {
		if !strings.EqualFold(a.Address, addrs[i]) {
			return mailReading{why: "RFC 5322 readers disagree on its recipients"}
		}
	}
	return mailReading{addrs: addrs}
}

// strictList splits an address list on the commas, semicolons and group
// colons outside quotes and angle brackets, and reads each element as an
// address bailiff can vouch for (plainAddr). A comment, a route or an
// element it cannot read is the reason the list is not trusted.
func strictList(s string) ([]string, string) {
	var addrs []string
	group, closed := false, false // inside a group; a group just ended
	start, quoted, angle := 0, false, false
	elem := func(i int) string {
		e := strings.TrimSpace(s[start:i])
		start = i + 1
		switch {
		case e == "" && closed:
			closed = false
			return ""
		case e == "":
			return "it has an empty element in its address list"
		case closed:
			return "text follows a group"
		}
		a, why := readElement(e)
		addrs = append(addrs, a)
		return why
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		var why string
		switch {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(' || c == ')':
			why = "it holds a comment, which readers strip or keep differently"
		case c == '<':
			angle = true
		case c == '>':
			angle = false
		case angle:
		case c == ':':
			// A group's name ends here: "team: a@x, b@y;".
			if group || closed || strings.ContainsAny(s[start:i], "@<>") || strings.TrimSpace(s[start:i]) == "" {
				why = "it holds a ':' that is not a group name"
			}
			group, start = true, i+1
		case c == ';' && group:
			why = elem(i)
			group, closed = false, true
		case c == ';':
			why = "it separates addresses with ';', which some readers take as a list and others refuse"
		case c == ',':
			why = elem(i)
		}
		if why != "" {
			return nil, why
		}
	}
	if quoted || angle || group {
		return nil, "it has an unclosed quote, angle bracket or group"
	}
	if why := elem(len(s)); why != "" {
		return nil, why
	}
	return addrs, ""
}

// readElement reads one list element: an address, or "Name <address>".
func readElement(e string) (string, string) {
	if i := strings.IndexByte(e, '<'); i >= 0 {
		if !strings.HasSuffix(e, ">") || strings.Count(e, "<") != 1 || strings.Count(e, ">") != 1 {
			return "", "a recipient's angle brackets do not enclose one address"
		}
		if why := plainName(strings.TrimSpace(e[:i])); why != "" {
			return "", why
		}
		e = e[i+1 : len(e)-1]
	}
	return e, plainAddr(e)
}

// plainName admits a display name every reader reads as a name: no
// address, angle bracket or encoded word (which a decoder can turn into
// one) inside it.
func plainName(n string) string {
	switch {
	case strings.Contains(n, "=?"):
		return "a recipient's name is an encoded word, which decoders can turn into an address"
	case strings.ContainsAny(strings.Trim(n, `"`), "@<>\\\":;"):
		return "a recipient's name holds '@', angle brackets, quotes, ':' or ';'"
	}
	return ""
}

// plainAddr admits an address whose local part is a plain dot-atom and
// whose domain is a host name. '%' (percent-hack relaying), '!' (a bang
// path), a second '@', a quoted local part and a route ("@a,@b:x@y")
// each let some mail system deliver elsewhere than the domain written.
func plainAddr(a string) string {
	if strings.ContainsAny(a, " \t\r\n") {
		return "it separates recipients with white space, which some readers take as a list and others refuse"
	}
	at := strings.LastIndexByte(a, '@')
	if at <= 0 {
		return "a recipient has no local part or domain"
	}
	local, domain := a[:at], a[at+1:]
	if strings.HasPrefix(local, ".") || strings.HasSuffix(local, ".") || strings.Contains(local, "..") {
		return "a recipient's local part has an empty dot-atom"
	}
	for i := 0; i < len(local); i++ {
		switch c := local[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', isDigit(c), strings.IndexByte(".+-_='", c) >= 0:
		case strings.IndexByte("%!@\"\\:,", c) >= 0:
			return "a recipient's local part holds " + quoteByte(c) + ", which some mail systems route on"
		default:
			return "a recipient's local part holds " + quoteByte(c) + ", which bailiff trusts in no address"
		}
	}
	if strings.HasSuffix(domain, ".") {
		return "a recipient's domain ends in a dot, which RFC 5322 readers refuse"
	}
	for i := 0; i < len(domain); i++ {
		if c := domain[i]; c < utf8.RuneSelf && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c) || c == '-' || c == '.') {
			return "a recipient's domain holds " + quoteByte(c)
		}
	}
	if !hostLike(domain) {
		return "a recipient's domain is not a host name"
	}
	return ""
}

func quoteByte(c byte) string {
	if c >= utf8.RuneSelf {
		return "a non-ASCII character"
	}
	return strconv.Quote(string(c))
}

// mailTarget reads a mail destination from the value as sent (raw) and
// normalized (norm): trusted (ok) only when both readings find the same
// recipients and every recipient's domain is written as it resolves.
func mailTarget(raw, norm string) target {
	raw = strings.TrimSpace(raw)
	r := readMail(raw)
	n := r // the common case, an address already in its normal form, is read once
	if norm != raw {
		n = readMail(norm)
	}
	if r.why == "" && n.why != "" {
		r.why = n.why
	}
	if r.why != "" {
		return target{why: r.why}
	}
	if len(r.addrs) != len(n.addrs) {
		return target{why: "it holds a different number of recipients once normalized"}
	}
	t := target{ok: true}
	for i, e := range n.addrs {
		e = strings.TrimSuffix(e, ".")
		re := r.addrs[i]
		h, hok := canonicalHost(emailDomain(e), false)
		rd := emailDomain(re)
		rh, rhok := h, hok
		if rd != emailDomain(e) {
			rh, rhok = canonicalHost(rd, false)
		}
		// Mail clients do not all map a domain with UTS-46: one that is
		// trusted must be written as it is (no invisible or compatibility
		// characters), so that every client reads the same domain.
		if !hok || !rhok || h != rh || !unorm.NFKC.IsNormalString(rd) || strings.ContainsFunc(rd, invisibleRune) {
			return target{why: "a recipient's domain reads differently as written and as it resolves"}
		}
		t.emails = append(t.emails, e)
		t.hosts = append(t.hosts, h)
	}
	if len(t.emails) == 1 {
		t.email, t.host = t.emails[0], t.hosts[0]
	}
	return t
}
