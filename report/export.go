package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"bailiff/export"
)

// exportWhat are the kinds of difference, in the order the summary
// counts them.
var exportWhat = []string{export.Dropped, export.Altered, export.Invented, export.Repeated, export.Unreadable, export.Overclaims}

type exportLine struct {
	Type    string         `json:"type"`
	File    string         `json:"file"`
	Format  string         `json:"format"`
	Result  string         `json:"result"`
	Events  int            `json:"events"`
	Records int64          `json:"records"`
	Counts  map[string]int `json:"differences"`
}

type exportDiffLine struct {
	Type   string `json:"type"`
	What   string `json:"what"`
	Line   int    `json:"line,omitempty"`
	Log    string `json:"log"`
	File   string `json:"file,omitempty"`
	Seq    int64  `json:"seq"`
	Detail string `json:"detail"`
}

// ExportCheck writes how the exported copy in file compares with the
// logs it was checked against: a summary, then each difference listed,
// the first in chain order first.
func ExportCheck(w io.Writer, f Format, file string, r *export.Result) error {
	result := "matches"
	if r.Differs() {
		result = "DIFFERS"
	}
	if f == JSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(exportLine{"export", file, string(r.Format), result, r.Events, r.Records, r.Counts}); err != nil {
			return err
		}
		for _, d := range r.Differences {
			if err := enc.Encode(exportDiffLine{"export-difference", d.What, d.Line, d.Key.Log, d.File, d.Key.Seq, d.Detail}); err != nil {
				return err
			}
		}
		return nil
	}
	var counts []string
	for _, what := range exportWhat {
		if n := r.Counts[what]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, what))
		}
	}
	var b strings.Builder
	write := writeTable
	if f == Markdown {
		write = writeMarkdown
		b.WriteString("## Exported copy\n\n")
	} else {
		b.WriteString("\n")
	}
	format := string(r.Format)
	if format == "" {
		format = "-"
	}
	_ = write(&b, []string{"EXPORT", "FORMAT", "RESULT", "EVENTS", "RECORDS", "DIFFERENCES"},
		[][]string{{file, format, result, fmt.Sprint(r.Events), fmt.Sprint(r.Records), orNone(counts)}})
	if len(r.Differences) > 0 {
		var rows [][]string
		for _, d := range r.Differences {
			line, seq, log := "-", "-", d.File
			if d.Line > 0 {
				line = fmt.Sprint(d.Line)
			}
			if d.What != export.Unreadable {
				seq = fmt.Sprint(d.Key.Seq)
				if log == "" {
					log = "log " + shortID(d.Key.Log)
				}
			}
			rows = append(rows, []string{d.What, line, orDash(log), seq, d.Detail})
		}
		b.WriteString("\n")
		if f == Markdown {
			b.WriteString("### Differences, the first first\n\n")
		}
		_ = write(&b, []string{"DIFFERENCE", "LINE", "LOG", "SEQ", "DETAIL"}, rows)
		if n := total(r.Counts); n > len(r.Differences) {
			fmt.Fprintf(&b, "\n... and %d more; --format json lists the first %d the same way\n", n-len(r.Differences), len(r.Differences))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
