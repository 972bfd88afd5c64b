// Package report is the only package that formats for humans: tables,
// Markdown and JSON lines over results from the other packages. Every
// output is deterministic: its order comes from its input, never from a
// map, a clock or the machine.
package report

import (
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
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
	r := renderer.NewBlueprint(tw.Rendition{
		Borders:  tw.BorderNone,
		Symbols:  tw.NewSymbolCustom("plain").WithColumn("  "),
		Settings: tw.Settings{Separators: tw.Separators{BetweenColumns: tw.On}, Lines: tw.LinesNone},
	})
	// tablewriter pads the last column too; a terminal table has no use
	// for the trailing blanks.
	var b strings.Builder
	if err := render(&b, r, tw.PaddingNone, plain, header, rows); err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n")+"\n")
	return err
}

// render draws a table with tablewriter, every cell through clean, with
// nothing of its own: no wrapping, no case changes, no trimming, so a cell
// reads exactly as the input (cleaned) and the output depends on it only.
func render(w io.Writer, r tw.Renderer, pad tw.Padding, clean func(string) string, header []string, rows [][]string) error {
	cell := tw.CellConfig{
		Formatting: tw.CellFormatting{AutoWrap: tw.WrapNone, AutoFormat: tw.Off},
		Alignment:  tw.CellAlignment{Global: tw.AlignLeft},
		Padding:    tw.CellPadding{Global: pad},
	}
	t := tablewriter.NewTable(w, tablewriter.WithRenderer(r), tablewriter.WithHeaderConfig(cell), tablewriter.WithRowConfig(cell),
		tablewriter.WithTrimSpace(tw.Off), tablewriter.WithTrimLine(tw.Off))
	c := func(r []string) []any {
		out := make([]any, len(r))
		for i, x := range r {
			out[i] = clean(x)
		}
		return out
	}
	t.Header(c(header)...)
	for _, row := range rows {
		if err := t.Append(c(row)...); err != nil {
			return err
		}
	}
	return t.Render()
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

// writeMarkdown writes a GitHub-flavoured table with | and newlines escaped.
func writeMarkdown(w io.Writer, header []string, rows [][]string) error {
	return render(w, renderer.NewMarkdown(), tw.Padding{Left: " ", Right: " ", Overwrite: true}, mdEscape, header, rows)
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
