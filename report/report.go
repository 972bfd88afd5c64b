// Package report is the only package that formats for humans: tables,
// Markdown and JSON lines over results from the other packages. Every
// output is deterministic: its order comes from its input, never from a
// map, a clock or the machine.
package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
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

// writeTable writes aligned columns. Cells are cleaned of control
// characters first: audit content is attacker-controlled and must not move
// the cursor or forge a line on a reviewer's terminal.
func writeTable(w io.Writer, header []string, rows [][]string) error {
	width := make([]int, len(header))
	clean := func(r []string) []string {
		out := make([]string, len(r))
		for i, c := range r {
			out[i] = plain(c)
			if n := utf8.RuneCountInString(out[i]); n > width[i] {
				width[i] = n
			}
		}
		return out
	}
	header = clean(header)
	for i := range rows {
		rows[i] = clean(rows[i])
	}
	var b strings.Builder
	line := func(r []string) {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	line(header)
	for _, r := range rows {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// plain replaces control characters with a visible escape.
func plain(s string) string {
	if s == "" {
		return "-"
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// writeMarkdown writes a GitHub-flavoured table with | and newlines escaped.
func writeMarkdown(w io.Writer, header []string, rows [][]string) error {
	var b strings.Builder
	row := func(r []string) {
		b.WriteString("|")
		for _, c := range r {
			b.WriteString(" " + mdEscape(c) + " |")
		}
		b.WriteByte('\n')
	}
	row(header)
	b.WriteString("|")
	for range header {
		b.WriteString("---|")
	}
	b.WriteByte('\n')
	for _, r := range rows {
		row(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdEscape makes text safe in a Markdown table cell or line: control
// characters visible, and every character Markdown would read as markup
// (or as a cell boundary) escaped.
func mdEscape(s string) string {
	s = plain(s)
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, "|", `\|`)
	for _, c := range []string{"*", "_", "`", "<", ">", "[", "]"} {
		s = strings.ReplaceAll(s, c, `\`+c)
	}
	return s
}
