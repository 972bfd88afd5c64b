package report

import (
	"encoding/json"
	"fmt"
	"io"

	"bailiff/engine"
)

// Lint writes policy lint findings; nothing at all in table form when
// there are none, so a clean lint leaves standard output empty (the CLI
// says on standard error what it checked).
func Lint(w io.Writer, f Format, findings []engine.Finding) error {
	if f == JSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, x := range findings {
			if err := enc.Encode(x); err != nil {
				return err
			}
		}
		return nil
	}
	if len(findings) == 0 {
		if f == Markdown {
			_, err := io.WriteString(w, "No findings.\n")
			return err
		}
		return nil
	}
	header := []string{"WHERE", "KIND", "SUBJECT", "FINDING"}
	rows := make([][]string, 0, len(findings))
	for _, x := range findings {
		rows = append(rows, []string{fmt.Sprintf("%s:%d", x.File, x.Line), x.Kind, x.Subject, x.Message})
	}
	if f == Markdown {
		return writeMarkdown(w, header, rows)
	}
	return writeTable(w, header, rows)
}
