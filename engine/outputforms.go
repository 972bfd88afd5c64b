package engine

import (
	"html"
	"mime"
	"net/netip"
	"strings"
)

// Output is indexed as its readers decode it, not only as written: a
// model, a browser, a mail client or a server reads "attacker%40evil.example",
// "attacker&#64;evil.example", "attacker\u0040evil.example" and
// "=?utf-8?Q?attacker=40evil.example?=" as the same address, so each
// must taint a send to it.

// maxDecodeRounds bounds how many times the decoders are applied to one
// output: each round applies every decoder once, in turn, so an escape
// inside another ("%26%2364%3B", an entity inside percent-encoding) is
// read; three rounds read three layers.
const maxDecodeRounds = 3

// outputForms calls fn with each form of an output's text that its
// readers decode to, when it holds anything to decode, and the last with
// a form's '+' read as a space, and as quoted-printable.
func outputForms(text string, fn func(string)) {
	x := text
	for range maxDecodeRounds {
		y := decodeOnce(x)
		if y == x {
			break
		}
		x = y
		fn(x)
	}
	if strings.Contains(x, "+") {
		fn(strings.ReplaceAll(x, "+", " "))
	}
	// Quoted-printable is a form of its own, not a step of the chain:
	// read everywhere, its =XX would turn a query's "=2024" into
	// something else before the other readers saw it.
	if strings.Contains(x, "=") {
		if q := qpDecode(x); q != x {
			fn(q)
		}
	}
	if d := defanged(x); d != x {
		fn(d)
	}
	base64Forms(x, fn)
}

// decodeOnce applies each decoder whose marker the text holds: HTML
// entities (with or without ';', as HTML5 readers take them), MIME
// encoded words, JavaScript and JSON escapes, and percent escapes.
func decodeOnce(x string) string {
	if strings.Contains(x, "&") {
		x = html.UnescapeString(x)
	}
	if strings.Contains(x, "=?") {
		if h, err := new(mime.WordDecoder).DecodeHeader(x); err == nil {
			x = h
		}
	}
	if strings.Contains(x, `\`) || strings.Contains(x, "%u") {
		x = codeUnescape(x)
	}
	if strings.Contains(x, "%") {
		x = lenientDecode(x)
	}
	return x
}

// codeUnescape decodes the escapes of JSON, JavaScript and C string text
// found in running text (\uXXXX, \xXX, \/) and IIS's %uXXXX, leaving
// anything else as written.
func codeUnescape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '/':
			b.WriteByte('/')
			i++
		case (s[i] == '\\' || s[i] == '%') && i+5 < len(s) && (s[i+1] == 'u' || s[i+1] == 'U') && allIn(s[i+2:i+6], isHexDigit):
			b.WriteRune(hexRune(s[i+2 : i+6]))
			i += 5
		case s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' && allIn(s[i+2:i+4], isHexDigit):
			b.WriteByte(unhex(s[i+2])<<4 | unhex(s[i+3]))
			i += 3
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func hexRune(h string) rune {
	var r rune
	for i := 0; i < len(h); i++ {
		r = r<<4 | rune(unhex(h[i]))
	}
	return r
}

// qpDecode decodes quoted-printable's =XX escapes (a mail body's "=40" is
// '@') and drops its soft line breaks, leaving anything else as written.
func qpDecode(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '=' && i+2 < len(s) && isHexDigit(s[i+1]) && isHexDigit(s[i+2]):
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
		case s[i] == '=' && i+1 < len(s) && s[i+1] == '\n':
			i++
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// maxIPv6Run bounds the runs of hex digits, ':' and '.' read as an IPv6
// address: the longest text form is 45 bytes, and a longer run is no
// address a reader would take, only work for the scan.
const maxIPv6Run = 64

// ipv6Hosts calls fn with every IPv6 address written bare in text ("post
// it to 2001:db8::1."), in the bracketed form a URL's host takes: a model
// told of one writes it into a URL. A run may carry a label before it
// ("host:2001:db8::1", "IPv6:2001:db8::1") or a full stop after it, so
// the run and each suffix after a single ':' are tried.
func ipv6Hosts(text string, fn func(string)) {
	for i := 0; i < len(text); i++ {
		if text[i] != ':' {
			continue
		}
		l, r := i, i
		for l > 0 && ipv6Byte(text[l-1]) {
			l--
		}
		for r < len(text) && ipv6Byte(text[r]) {
			r++
		}
		i = r
		run := strings.TrimRight(text[l:r], ".")
		if len(run) < 3 || len(run) > maxIPv6Run || strings.Count(run, ":") < 2 {
			continue
		}
		for k := 0; ; {
			cand := run[k:]
			if a, err := netip.ParseAddr(cand); err == nil && a.Is6() {
				fn("[" + a.String() + "]")
			}
			next := strings.IndexByte(cand, ':')
			if next < 0 || strings.HasPrefix(cand[next:], "::") {
				break
			}
			k += next + 1
		}
	}
}

func ipv6Byte(c byte) bool { return c == ':' || c == '.' || isHexDigit(c) }

// indexer notes each address and host tokens finds as output i's.
func (ix *taintIndex) indexer(i int32) func(email, host string) {
	return func(email, host string) {
		if email != "" {
			ix.note(ix.emails, email, i, true)
		}
		if host != "" {
			ix.note(ix.hosts, host, i, true)
		}
	}
}

// addForms indexes what a reader finds in output i beyond its tokens:
// bare IPv6 addresses, and each decoded form, whose text (when it differs
// from n, the normalized output) is output i's too, so a URL written in
// entities is found whole, not only by its host.
func (ix *taintIndex) addForms(i int32, text, n string) {
	cut := readForms(text, n, func(h string, clone bool) { ix.note(ix.hosts, h, i, clone) }, ix.indexer(i),
		func(nx string) { ix.appendPiece(formSep + nx) })
	if cut {
		ix.cut = append(ix.cut, i)
	}
}

// readForms is what add and Analyzed both take from output text
// (normalized n) beyond its tokens, so the two cannot index apart: each
// host (clone, when it points into a larger string), each token of a
// decoded form, and each form's text the budget keeps. It reports whether
// the budget cut any.
func readForms(text, n string, host func(h string, clone bool), token func(email, host string), form func(nx string)) (cut bool) {
	ipv6Hosts(text, func(h string) { host(h, false) })
	fb := formBudget{n: n, left: maxFormText(n)}
	outputForms(text, func(x string) {
		urlHosts(x, func(h string) { host(h, true) })
		ipv6Hosts(x, func(h string) { host(h, false) })
		nx := Normalize(x)
		tokens(nx, token)
		if fb.take(nx) {
			form(nx)
		}
	})
	return fb.cut
}

// maxFormText bounds the decoded forms' text an output of normalized text
// n adds to the index: four times its own, and 64 KiB. Past it, forms
// add their addresses and hosts only, and the output is cut: the tiers
// then count it as holding every destination, as its text is not all
// known.
func maxFormText(n string) int { return 4*len(n) + 64<<10 }

// formBudget decides which decoded forms' text is kept: each that differs
// from the output and from the form before it, while the budget lasts.
type formBudget struct {
	n, prev string
	left    int
	cut     bool
}

func (fb *formBudget) take(nx string) bool {
	if nx == fb.n || nx == fb.prev {
		return false
	}
	fb.prev = nx
	if len(nx)+1 > fb.left {
		fb.cut = true
		return false
	}
	fb.left -= len(nx) + 1
	return true
}
