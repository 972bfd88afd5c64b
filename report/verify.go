package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"bailiff/verify"
)

// verifyResult is "ok" for a log with no findings, "FAILED" otherwise.
func verifyResult(r *verify.Report) string {
	if len(r.Findings) > 0 {
		return "FAILED"
	}
	return "ok"
}

type verifyLogLine struct {
	Type    string `json:"type"`
	File    string `json:"file"`
	Result  string `json:"result"`
	Records int64  `json:"records"`
	// Sessions and Calls are null when the semantics were not checked:
	// they were not counted, which is not the same as none.
	Sessions    *int  `json:"sessions"`
	Calls       *int  `json:"calls"`
	Semantics   bool  `json:"semantics"`
	Checkpoint  int64 `json:"checkpoint_size,omitempty"`
	Findings    int   `json:"findings"`
	Unevaluable int   `json:"unevaluable"`
}

type findingLine struct {
	Type string `json:"type"`
	verify.Finding
}

type unevaluableLine struct {
	Type string `json:"type"`
	verify.Unevaluable
}

// Verify writes what verify found in each log: a summary per log, then
// every finding (the first failing record of a broken chain, each
// decision that does not recompute, each bad grant or evidence), then the
// decisions that could not be recomputed because their inputs were
// redacted or purged.
func Verify(w io.Writer, f Format, logs []*verify.Report) error {
	if f == JSON {
		return verifyJSON(w, logs)
	}
	sumHead := []string{"LOG", "RESULT", "RECORDS", "SESSIONS", "CALLS", "CHECKED", "FINDINGS", "UNEVALUABLE"}
	var sums, finds, unevs [][]string
	for _, r := range logs {
		checked := "integrity, semantics"
		if !r.Checked {
			checked = "integrity"
		}
		if r.Checkpoint != nil {
			checked += fmt.Sprintf(", checkpoint of %d", r.Checkpoint.Size)
		}
		sessions, calls := fmt.Sprint(r.Sessions), fmt.Sprint(r.Calls)
		if !r.Checked {
			sessions, calls = "-", "-"
		}
		sums = append(sums, []string{r.File, verifyResult(r), fmt.Sprint(r.Records), sessions, calls, checked,
			fmt.Sprint(len(r.Findings)), fmt.Sprint(len(r.Unevaluable))})
		for _, x := range r.Findings {
			finds = append(finds, []string{x.File, fmt.Sprint(x.Seq), x.Session, x.Call, x.Kind, x.Recorded, x.Recomputed, x.Reason})
		}
		for _, x := range r.Unevaluable {
			unevs = append(unevs, []string{x.File, fmt.Sprint(x.Seq), x.Session, x.Call, x.Tool, x.Recorded, x.Reason})
		}
	}
	findHead := []string{"LOG", "SEQ", "SESSION", "CALL", "FINDING", "RECORDED", "RECOMPUTED", "REASON"}
	unevHead := []string{"LOG", "SEQ", "SESSION", "CALL", "TOOL", "RECORDED", "WHY IT CANNOT BE RECOMPUTED"}
	var b strings.Builder
	write := writeTable
	if f == Markdown {
		write = writeMarkdown
		b.WriteString("## Audit log verification\n\n")
	}
	if err := write(&b, sumHead, sums); err != nil {
		return err
	}
	if len(finds) > 0 {
		b.WriteString("\n")
		if f == Markdown {
			b.WriteString("### Findings\n\n")
		}
		_ = write(&b, findHead, finds)
	}
	if len(unevs) > 0 {
		b.WriteString("\n")
		if f == Markdown {
			b.WriteString("### Unevaluable decisions\n\n")
		}
		_ = write(&b, unevHead, unevs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// verifyJSON writes each log's line, then its findings, unevaluable
// decisions and warnings, as JSON lines.
func verifyJSON(w io.Writer, logs []*verify.Report) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range logs {
		l := verifyLogLine{Type: "log", File: r.File, Result: verifyResult(r), Records: r.Records,
			Semantics: r.Checked, Findings: len(r.Findings), Unevaluable: len(r.Unevaluable)}
		if r.Checked {
			l.Sessions, l.Calls = &r.Sessions, &r.Calls
		}
		if r.Checkpoint != nil {
			l.Checkpoint = r.Checkpoint.Size
		}
		if err := enc.Encode(l); err != nil {
			return err
		}
		for _, x := range r.Findings {
			if err := enc.Encode(findingLine{"finding", x}); err != nil {
				return err
			}
		}
		for _, x := range r.Unevaluable {
			if err := enc.Encode(unevaluableLine{"unevaluable", x}); err != nil {
				return err
			}
		}
		for _, x := range r.Warnings {
			if err := enc.Encode(findingLine{"warning", x}); err != nil {
				return err
			}
		}
	}
	return nil
}
