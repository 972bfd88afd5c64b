package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"bailiff/audit"
)

// callsSummary is the first JSON line of a call listing: what it was
// listed from, and how many calls matched of how many read.
type callsSummary struct {
	Type    string `json:"type"`
	Calls   int    `json:"calls"`
	Matched int    `json:"matched"`
	unverifiedFields
}

// callLine is the JSON form of one listed call.
type callLine struct {
	Type      string         `json:"type"`
	Log       string         `json:"log"`
	Session   string         `json:"session"`
	Principal string         `json:"principal"`
	Call      string         `json:"call"`
	Seq       int            `json:"seq"`
	At        string         `json:"at,omitempty"`
	Server    string         `json:"server"`
	Tool      string         `json:"tool"`
	Verdict   string         `json:"verdict"`
	Answer    string         `json:"answer,omitempty"`
	Check     string         `json:"check"`
	Rule      string         `json:"rule,omitempty"`
	Reason    string         `json:"reason"`
	Args      map[string]any `json:"args"`
	Redacted  []string       `json:"redacted,omitempty"`
}

// maxArgsCell bounds the arguments shown in a table cell; the JSON
// listing has them whole.
const maxArgsCell = 160

// Calls writes a listing of calls: rows, matched of read, from the inputs
// prov names. A table or Markdown cell shows the arguments as recorded,
// cut at maxArgsCell characters with the cut marked; every cell is
// cleaned, since a log's text is the agent's and the servers'.
func Calls(w io.Writer, f Format, rows []*audit.CallRow, read int, prov Provenance) error {
	if f == JSON {
		return callsJSON(w, rows, read, prov)
	}
	var b strings.Builder
	write := writeTable
	if f == Markdown {
		write = writeMarkdown
		fmt.Fprintf(&b, "## Calls: %d of %s\n\n", len(rows), counted(read, "call"))
	}
	writeUnverified(&b, f, prov.Unverified)
	logs, servers, principals := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		logs[r.Log], servers[r.Server], principals[r.Principal] = true, true, true
	}
	head := []string{"SESSION", "CALL", "SEQ", "TIME", "TOOL", "VERDICT", "CHECK", "RULE", "ARGUMENTS", "REASON"}
	if len(servers) > 1 {
		head = append(head[:4], append([]string{"SERVER"}, head[4:]...)...)
	}
	if len(principals) > 1 {
		head = append(head[:1], append([]string{"PRINCIPAL"}, head[1:]...)...)
	}
	if len(logs) > 1 {
		head = append([]string{"LOG"}, head...)
	}
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		cells := []string{r.Session, r.Call, fmt.Sprint(r.Seq), callTime(r.At), r.Tool, callVerdict(r), string(r.Decision.Check), r.Decision.Rule, truncate(argsText(r.Args, r.Redacted), maxArgsCell), r.Decision.Reason}
		if len(servers) > 1 {
			cells = append(cells[:4], append([]string{r.Server}, cells[4:]...)...)
		}
		if len(principals) > 1 {
			cells = append(cells[:1], append([]string{r.Principal}, cells[1:]...)...)
		}
		if len(logs) > 1 {
			cells = append([]string{r.Log}, cells...)
		}
		out = append(out, cells)
	}
	if len(rows) > 0 {
		if err := write(&b, head, out); err != nil {
			return err
		}
	} else if f == Markdown {
		b.WriteString("No calls match.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func callsJSON(w io.Writer, rows []*audit.CallRow, read int, prov Provenance) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(callsSummary{Type: "summary", Calls: read, Matched: len(rows), unverifiedFields: unverifiedOf(prov)}); err != nil {
		return err
	}
	for _, r := range rows {
		args := r.Args
		if args == nil {
			args = map[string]any{}
		}
		d := r.Decision
		at := ""
		if !r.At.IsZero() {
			at = r.At.UTC().Format(time.RFC3339Nano)
		}
		if err := enc.Encode(callLine{Type: "call", Log: r.Log, Session: r.Session, Principal: r.Principal, Call: r.Call, Seq: r.Seq, At: at,
			Server: r.Server, Tool: r.Tool, Verdict: r.Verdict, Answer: r.Answer, Check: string(d.Check), Rule: d.Rule,
			Reason: d.Reason, Args: args, Redacted: r.Redacted}); err != nil {
			return err
		}
	}
	return nil
}

// callVerdict is a call's final verdict as a reader is told it: an asked
// call says it was asked, and what came of it.
func callVerdict(r *audit.CallRow) string {
	switch {
	case r.Verdict == audit.Answered:
		return "ask (" + r.Answer + " out of band)"
	case r.Verdict == "ask":
		return "ask (unanswered)"
	case r.Answer != "":
		return r.Verdict + " (asked, " + r.Answer + ")"
	}
	return r.Verdict
}

// argsText is a call's arguments as recorded, as compact JSON with its
// keys sorted, and the redacted paths named after them.
func argsText(args map[string]any, redacted []string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if args == nil {
		args = map[string]any{}
	}
	if err := enc.Encode(args); err != nil {
		return "(arguments not shown: " + err.Error() + ")"
	}
	s := strings.TrimSuffix(b.String(), "\n")
	if len(redacted) > 0 {
		s += " redacted: " + strings.Join(redacted, ", ")
	}
	return s
}

// callTime is a call's time to the second, in UTC.
func callTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}
