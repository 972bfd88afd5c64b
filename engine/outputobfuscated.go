package engine

import (
	"encoding/base64"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Obfuscations a model undoes without being asked: an address written
// "claims [at] evil [dot] example" or "claims(at)evil(dot)example", a
// defanged "hxxps://", and a URL or address in base64 ("so spam filters
// leave it alone"). Each is a form of the output of its own, so what a
// model would send from it taints the send. Only bracketed at and dot
// count: "meet at the dot" is prose.

var (
	defangAt  = regexp.MustCompile(`(?i)\s*[\[({<]\s*(?:at|@)\s*[\])}>]\s*`)
	defangDot = regexp.MustCompile(`(?i)\s*[\[({<]\s*(?:dot|\.)\s*[\])}>]\s*`)
	defangHxx = regexp.MustCompile(`(?i)\bh(?:xx|\*\*)p(s?)(?:\[:\]|:)`)
)

// defanged is text with its bracketed at and dot, and hxxp schemes, read
// back; text itself when it holds none.
func defanged(text string) string {
	if !mayBeDefanged(text) {
		return text
	}
	x := defangAt.ReplaceAllString(text, "@")
	x = defangDot.ReplaceAllString(x, ".")
	return defangHxx.ReplaceAllString(x, "http$1:")
}

// mayBeDefanged tells, in one pass and without allocating, whether text
// could hold what defanged reads back: a closing bracket after "at",
// "dot", '@' or '.' (spaces between), or "hxxp"/"h**p" in any case. Most
// output (JSON, HTML) has brackets; few have these.
func mayBeDefanged(text string) bool {
	for i := 0; i < len(text); i++ {
		switch c := text[i]; c {
		case ']', ')', '}', '>':
			j := i
			for j > 0 && strings.IndexByte(" \t\n\r\f", text[j-1]) >= 0 {
				j--
			}
			if j > 0 && (text[j-1] == '@' || text[j-1] == '.') {
				return true
			}
			if j >= 2 && lowerIs(text[j-2:j], "at") || j >= 3 && lowerIs(text[j-3:j], "dot") {
				return true
			}
		case 'h', 'H':
			if i+4 <= len(text) && (lowerIs(text[i+1:i+3], "xx") || text[i+1:i+3] == "**") && (text[i+3] == 'p' || text[i+3] == 'P') {
				return true
			}
		}
	}
	return false
}

// lowerIs tells whether ASCII s, lower-cased, is w.
func lowerIs(s, w string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// base64 runs: at least minB64 characters of the standard or URL-safe
// alphabet, at most maxB64Runs of them per output and maxB64Bytes each,
// so hashes and identifiers in bulk output cost a bounded scan.
const (
	minB64      = 16
	maxB64Runs  = 64
	maxB64Bytes = 4096
)

// base64Forms calls fn with the text of each base64 run in text that
// decodes to printable UTF-8 holding '@' or '.', as a model reads it.
func base64Forms(text string, fn func(string)) {
	runs := 0
	for i := 0; i < len(text) && runs < maxB64Runs; {
		if !isB64(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isB64(text[j]) {
			j++
		}
		k := j
		for k < len(text) && k < j+2 && text[k] == '=' {
			k++
		}
		if run := text[i:k]; j-i >= minB64 && j-i <= maxB64Bytes {
			runs++
			if d, ok := decodeB64(run); ok {
				fn(d)
			}
		}
		i = k
		if i == j {
			i++
		}
	}
}

func isB64(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
}

func decodeB64(run string) (string, bool) {
	trimmed := strings.TrimRight(run, "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(trimmed)
		if err != nil || !utf8.Valid(b) {
			continue
		}
		s := string(b)
		if !strings.ContainsAny(s, "@.") || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' && r != '\n' && r != '\t' }) {
			continue
		}
		return s, true
	}
	return "", false
}
