package report

import (
	"bufio"
	"io"
	"strings"

	"github.com/clipperhouse/displaywidth"
)

// table draws aligned columns: plain for a terminal (two spaces between
// columns, no trailing blanks) or a GitHub-flavoured Markdown table.
// Every cell is cleaned first (plain, or mdEscape for Markdown): audit
// content is attacker-controlled and must not move the cursor, forge a
// line on a reviewer's terminal, or break out of its cell. The widths are
// measured over every row before the first is written, so a listing of a
// million changed calls is measured in one pass and drawn in a second
// without being held.
type table struct {
	md     bool
	widths []int
}

func newTable(md bool, header []string) *table {
	t := &table{md: md, widths: make([]int, len(header))}
	t.measure(header)
	return t
}

func (t *table) clean(s string) string {
	if t.md {
		return mdEscape(s)
	}
	return plain(s)
}

// measure widens the columns to hold a row.
func (t *table) measure(cells []string) {
	for i, c := range cells {
		if w := width(t.clean(c)); i < len(t.widths) && w > t.widths[i] {
			t.widths[i] = w
		}
	}
}

// width is column i's width; a cell past the header's columns has none
// of its own, and is written as it is rather than stop the output.
func (t *table) width(i int) int {
	if i < len(t.widths) {
		return t.widths[i]
	}
	return 0
}

// header writes the header row, and under it Markdown's separator.
func (t *table) header(w *bufio.Writer, cells []string) {
	t.row(w, cells)
	if t.md {
		w.WriteByte('|')
		for _, n := range t.widths {
			w.WriteByte(':')
			w.WriteString(strings.Repeat("-", n+1))
			w.WriteByte('|')
		}
		w.WriteByte('\n')
	}
}

// row writes one row, each cell padded to its column's width (the last
// one too in Markdown, where the closing bar follows it).
func (t *table) row(w *bufio.Writer, cells []string) {
	if t.md {
		w.WriteByte('|')
		for i, c := range cells {
			c = t.clean(c)
			w.WriteByte(' ')
			w.WriteString(c)
			pad(w, t.width(i)-width(c))
			w.WriteString(" |")
		}
		w.WriteByte('\n')
		return
	}
	var line strings.Builder
	for i, c := range cells {
		c = t.clean(c)
		if i > 0 {
			line.WriteString("  ")
		}
		line.WriteString(c)
		if i < len(cells)-1 {
			line.WriteString(strings.Repeat(" ", max(0, t.width(i)-width(c))))
		}
	}
	w.WriteString(strings.TrimRight(line.String(), " "))
	w.WriteByte('\n')
}

func pad(w *bufio.Writer, n int) {
	for ; n > 0; n-- {
		w.WriteByte(' ')
	}
}

// width is how many terminal columns s takes, rune by rune as a terminal
// lays it out: the same on every machine (never the East Asian widths a
// locale could switch on, which would make the output depend on where it
// was drawn).
func width(s string) int {
	if printableASCII(s) {
		return len(s)
	}
	n := 0
	for _, r := range s {
		n += displaywidth.Options{}.Rune(r)
	}
	return n
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// writeTable writes aligned columns for a terminal.
func writeTable(w io.Writer, header []string, rows [][]string) error {
	return drawTable(w, false, header, rows)
}

// writeMarkdown writes a GitHub-flavoured table with | and newlines escaped.
func writeMarkdown(w io.Writer, header []string, rows [][]string) error {
	return drawTable(w, true, header, rows)
}

func drawTable(w io.Writer, md bool, header []string, rows [][]string) error {
	t := newTable(md, header)
	for _, r := range rows {
		t.measure(r)
	}
	bw := bufio.NewWriter(w)
	t.header(bw, header)
	for _, r := range rows {
		t.row(bw, r)
	}
	return bw.Flush()
}
