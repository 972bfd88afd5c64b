// Package report is the only package that formats for humans: tables,
// Markdown and JSON lines over results from the other packages. Every
// output is deterministic: its order comes from its input, never from a
// map, a clock or the machine.
package report

import (
	"fmt"
	"strings"
	"unicode"
)

// Format is an output format of the offline commands.
type Format string

// The formats.
const (
	Table    Format = "table"
	JSON     Format = "json"
	Markdown Format = "markdown"
)

// ParseFormat checks a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Table, JSON, Markdown:
		return f, nil
	}
	return "", fmt.Errorf("unknown format %q (want table, json or markdown)", s)
}

// plain replaces control characters with a visible escape.
func plain(s string) string {
	if s == "" {
		return "-"
	}
	if printableASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 0x20 && r < 0x7f:
			b.WriteByte(byte(r))
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Cf, r):
			// Cf, the format characters, are invisible: bidi overrides
			// and isolates, zero-width spaces and joiners, marks, the BOM
			// and tag characters would make two names look one.
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdEscape makes text safe in a Markdown table cell or line: control
// characters visible, and every character Markdown would read as markup
// (or as a cell boundary) escaped.
func mdEscape(s string) string {
	s = plain(s)
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, "|", `\|`)
	// & would start an entity (&#x202E; is a bidi override once decoded,
	// &#124; a pipe) and ~~ a strikethrough over the cells that follow.
	for _, c := range []string{"*", "_", "`", "<", ">", "[", "]", "&", "~"} {
		s = strings.ReplaceAll(s, c, `\`+c)
	}
	return s
}
