package report

import (
	"fmt"
	"strings"
	"time"
)

// maxFlaggedShown bounds the calls that need a look the pack lists; the
// calls command lists them all.
const maxFlaggedShown = 10

// maxFlaggedArgs bounds a flagged call's arguments in its cell.
const maxFlaggedArgs = 80

// mdFlagged writes the calls a reviewer must look at, on the first
// screen: the denied calls and the asks no one answered, each with where
// it is, what it was and why, up to maxFlaggedShown; then how many more,
// and the command that lists them all.
func (p *Pack) mdFlagged(b *mdWriter) {
	if p.FlaggedCalls == 0 {
		return
	}
	b.w("## Calls that need a look\n\n")
	b.w("%s denied or asked and never answered, in log order.", counted(p.FlaggedCalls, "call"))
	shown := p.Flagged
	if len(shown) > maxFlaggedShown {
		shown = shown[:maxFlaggedShown]
	}
	if len(shown) < p.FlaggedCalls {
		b.w(" The first %d are below; %s lists all %d.", len(shown), p.callsCommand("--verdict deny --verdict ask"), p.FlaggedCalls)
	}
	b.w("\n\n")
	multi := len(p.Logs) > 1
	principals := map[string]bool{}
	for _, r := range shown {
		principals[r.Principal] = true
	}
	head := []string{"SESSION", "CALL", "SEQ", "TIME", "TOOL", "VERDICT", "ARGUMENTS", "WHY"}
	if len(principals) > 1 {
		head = append([]string{"PRINCIPAL"}, head...)
	}
	var rows [][]string
	for _, r := range shown {
		where := r.Session
		if multi {
			where = r.Log + " " + where
		}
		row := []string{where, r.Call, fmt.Sprint(r.Seq), callTime(r.At), r.Tool, callVerdict(r), truncate(argsText(r.Args, r.Redacted), maxFlaggedArgs), r.Decision.Reason}
		if len(principals) > 1 {
			row = append([]string{r.Principal}, row...)
		}
		rows = append(rows, row)
	}
	b.table(head, rows)
}

// callsCommand is the bailiff calls command over the pack's logs, with
// the flags given, as Markdown text.
func (p *Pack) callsCommand(flags string) string {
	args := []string{"bailiff", "calls", flags}
	// The pack's period, so the command lists the calls the pack counts.
	if !p.In.Since.IsZero() {
		args = append(args, "--since", p.In.Since.UTC().Format(time.RFC3339Nano))
	}
	if !p.In.Until.IsZero() {
		args = append(args, "--until", p.In.Until.UTC().Format(time.RFC3339Nano))
	}
	for _, l := range p.Logs {
		args = append(args, shellWord(l.File))
	}
	return mdEscape(strings.Join(args, " "))
}

// shellWord quotes a file name for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+:=@,%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
