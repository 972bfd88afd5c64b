package report

import (
	"encoding/json"
	"io"

	"bailiff/audit"
)

// verdictLine is the JSON form of one call's verdict, one per line.
type verdictLine struct {
	// File, session and line place the call: ids are unique only in a
	// session, and a run may replay several traces.
	File    string `json:"file"`
	Session string `json:"session"`
	Line    int    `json:"line"`
	ID      string `json:"id"`
	Tool    string `json:"tool"`
	Verdict string `json:"verdict"`
	Check   string `json:"check"`
	Rule    string `json:"rule"`
	Reason  string `json:"reason"`
}

// Verdicts writes the verdict of every replayed call.
func Verdicts(w io.Writer, f Format, results []audit.Outcome) error {
	if f == JSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, r := range results {
			d := r.Decision
			if err := enc.Encode(verdictLine{File: r.File, Session: r.Session, Line: r.Line, ID: r.ID, Tool: r.Tool, Verdict: r.Verdict(), Check: string(d.Check), Rule: d.Rule, Reason: d.Reason}); err != nil {
				return err
			}
		}
		return nil
	}
	header := []string{"SESSION", "CALL", "TOOL", "VERDICT", "CHECK", "RULE", "REASON"}
	rows := make([][]string, 0, len(results))
	for _, r := range results {
		d := r.Decision
		rows = append(rows, []string{r.Session, r.ID, r.Tool, r.Verdict(), string(d.Check), d.Rule, d.Reason})
	}
	if f == Markdown {
		return writeMarkdown(w, header, rows)
	}
	return writeTable(w, header, rows)
}
