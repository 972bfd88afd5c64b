package engine

import (
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Normalize prepares text for taint matching: Unicode NFKC, case folding,
// and every run of white space collapsed to one space, trimmed. The same
// function is applied to tool output and to destinations, so that
// "ＡＴＴＡＣＫＥＲ@evil.example" in an email matches attacker@evil.example
// in a call.
func Normalize(s string) string {
	if isASCII(s) {
		return asciiNormalize(s)
	}
	// Invalid bytes first become U+FFFD: NFKC and case folding read
	// them differently from a string that already holds U+FFFD, and the
	// result would not be a fixed point ("\xf0ǅ").
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	// Folding can produce characters NFKC maps again, and x/text's fold is
	// not idempotent for a few scripts (Cherokee): repeat until the text
	// stops changing, so that output and destinations meet in one form.
	for range 4 {
		n := norm.NFKC.String(cases.Fold().String(norm.NFKC.String(s)))
		if n == s {
			break
		}
		s = n
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// asciiNormalize returns s itself when it is already normal, so the common
// case of a lower-case destination allocates nothing.
func asciiNormalize(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if ('A' <= c && c <= 'Z') || (asciiSpace(c) && (c != ' ' || i == 0 || i == len(s)-1 || s[i+1] == ' ')) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	b := make([]byte, 0, len(s))
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if asciiSpace(c) {
			space = len(b) > 0
			continue
		}
		if space {
			b = append(b, ' ')
			space = false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	// b is not written again: the string can be its bytes, not a copy.
	return unsafe.String(unsafe.SliceData(b), len(b))
}
