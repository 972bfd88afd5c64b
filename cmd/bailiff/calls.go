package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/report"
	"bailiff/shadow"
)

type callsParams struct {
	verdicts, tools, servers, sessions, checks []string
	principals                                 []string
	since, until                               string
	unverified, bySession                      bool
	format                                     formatFlag
}

// callVerdicts are what --verdict selects: a final verdict, or asked for
// every call that was asked, whatever came of it.
var callVerdicts = []string{"allow", "deny", "ask", audit.Answered, "asked"}

func newCalls(stdout, stderr io.Writer) *cobra.Command {
	var p callsParams
	c := &cobra.Command{
		Use:   "calls LOG|DIR...",
		Short: "List the calls of audit logs: who called what, with which arguments, and what came of it",
		Long: `calls lists every call of audit logs, in the log's order: its session, call
id and record seq (what bailiff prove takes), time, tool, final verdict,
the check and rule that decided it, its arguments as recorded (a value the
policy redacts is not in the log, and the listing names its path) and the
reason.

An asked call shows what came of it: "allow (asked, approved)" or "deny
(asked, declined)" when answered in band, "ask (approved out of band)"
when a human answered it with bailiff approve or decline (the retry that
used the answer is a call of its own), "ask (unanswered)" when no one did.

Filters combine: a call is listed when it matches every filter given, and
any value of a repeated one. --verdict takes allow, deny, ask (never
answered), answered (answered out of band) or asked (every asked call).
--since and --until take RFC 3339 times or dates (midnight UTC); a call
with no recorded time is then not listed. --tool and --server take exact
names.

A log must pass bailiff verify first; --allow-unverified lists one that
does not (never past an integrity failure), and every format then says
UNVERIFIED. --format json writes a summary line, then one line per call
with its arguments whole; table and markdown cut them at 160 characters.`,
		Example: `  bailiff calls audit.jsonl
  bailiff calls --verdict deny --verdict ask audit/
  bailiff calls --session mail-20261201T0900-1a2b --format json audit.jsonl
  bailiff calls --tool send_email --since 2026-12-01T00:00:00Z audit.jsonl`,
		Args: minArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			return p.check()
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCalls(cmd.InOrStdin(), stdout, stderr, p, args)
		},
	}
	c.Flags().StringArrayVar(&p.verdicts, "verdict", nil, "list calls with this final verdict: allow, deny, ask, answered or asked (repeatable)")
	c.Flags().StringArrayVar(&p.tools, "tool", nil, "list calls to this tool (repeatable)")
	c.Flags().StringArrayVar(&p.servers, "server", nil, "list calls to this server (repeatable)")
	c.Flags().StringArrayVar(&p.sessions, "session", nil, "list calls of this session (repeatable)")
	c.Flags().StringArrayVar(&p.principals, "principal", nil, "list calls of sessions that acted for this principal, by subject (repeatable)")
	c.Flags().BoolVar(&p.bySession, "by-session", false, "group the calls by principal, then session (each in the log's order), instead of listing them in the log's order")
	c.Flags().StringArrayVar(&p.checks, "check", nil, "list calls this check decided: "+strings.Join(decisionChecks(), ", ")+" (repeatable)")
	c.Flags().StringVar(&p.since, "since", "", "only calls at or after this RFC 3339 time")
	c.Flags().StringVar(&p.until, "until", "", "only calls before this RFC 3339 time")
	c.Flags().BoolVar(&p.unverified, "allow-unverified", false, "list logs that fail verify (the output says UNVERIFIED)")
	completeValues(c, "verdict", callVerdicts...)
	completeValues(c, "check", decisionChecks()...)
	p.format.register(c)
	return c
}

// decisionChecks are the checks a decision can name.
func decisionChecks() []string {
	out := []string{string(engine.CheckPinning), string(engine.CheckRules)}
	for _, c := range engine.Switchable()[1:] {
		out = append(out, string(c))
	}
	return append(out, string(engine.CheckDefaultDeny), string(engine.CheckInternal))
}

func (p callsParams) check() error {
	for _, v := range p.verdicts {
		if !slices.Contains(callVerdicts, v) {
			hint := "asked lists every asked call, whatever came of it"
			for _, want := range callVerdicts {
				if len(v) >= 3 && strings.HasPrefix(strings.ToLower(v), want[:3]) {
					hint = "did you mean --verdict " + want + "? " + hint
					break
				}
			}
			return usageErr(fmt.Errorf("--verdict %q is not a verdict (want %s)", v, strings.Join(callVerdicts, ", ")), hint)
		}
	}
	for _, t := range p.tools {
		if strings.ContainsAny(t, "*?[") {
			// A glob would match no tool by name, and list nothing.
			return usageErr(fmt.Errorf("--tool %q is a pattern: --tool takes a tool's exact name", t), "repeat --tool for each tool to list")
		}
	}
	for _, c := range p.checks {
		if !slices.Contains(decisionChecks(), c) {
			return usageErr(fmt.Errorf("--check %q is not a check (want %s)", c, strings.Join(decisionChecks(), ", ")), "")
		}
	}
	if _, _, err := p.period(); err != nil {
		return err
	}
	_, err := p.format.get()
	return err
}

// period reads --since and --until, dates too.
func (p callsParams) period() (since, until time.Time, err error) {
	return parsePeriod(p.since, p.until, true)
}

// matches tells whether a call passes every filter given.
func (p callsParams) matches(r *audit.CallRow, since, until time.Time) bool {
	in := func(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
	verdict := len(p.verdicts) == 0 || slices.Contains(p.verdicts, r.Verdict) || (slices.Contains(p.verdicts, "asked") && (r.Answer != "" || r.Verdict == "ask"))
	if (!since.IsZero() || !until.IsZero()) && r.At.IsZero() {
		return false
	}
	return verdict && in(p.tools, r.Tool) && in(p.servers, r.Server) && in(p.sessions, r.Session) && in(p.principals, r.Principal) && in(p.checks, string(r.Decision.Check)) &&
		(since.IsZero() || !r.At.Before(since)) && (until.IsZero() || r.At.Before(until))
}

func runCalls(stdin io.Reader, stdout, stderr io.Writer, p callsParams, args []string) error {
	inputs, cleanup, err := readInputs(stdin, stderr, args)
	defer cleanup()
	if err != nil {
		return err
	}
	for _, in := range inputs {
		if in.Trace != nil {
			return usageErr(fmt.Errorf("%s is a trace, not an audit log: its calls were never decided", in.Name), "bailiff replay --policy POLICY "+in.Name+" lists a trace's calls as a policy decides them")
		}
	}
	prov, err := verifyLogs(stderr, inputs, p.unverified, false, io.Discard)
	if err != nil {
		return err
	}
	since, until, _ := p.period()
	var rows []*audit.CallRow
	read := 0
	for i, in := range inputs {
		var mine []*audit.CallRow
		if err := readCalls(in, prov.Inputs[i], func(r *audit.CallRow) error {
			read++
			if p.matches(r, since, until) {
				mine = append(mine, r)
			}
			return nil
		}); err != nil {
			return err
		}
		// Sessions end in their own order: the listing is the log's.
		slices.SortStableFunc(mine, func(a, b *audit.CallRow) int { return a.Seq - b.Seq })
		rows = append(rows, mine...)
	}
	if p.bySession {
		// Whom each session acted for, then each session whole, each in
		// the log's order: who did what, read one person at a time.
		slices.SortStableFunc(rows, func(a, b *audit.CallRow) int {
			return cmp.Or(strings.Compare(a.Principal, b.Principal), strings.Compare(a.Log, b.Log), strings.Compare(a.Session, b.Session))
		})
	}
	f, _ := p.format.get()
	if err := report.Calls(stdout, f, rows, read, *prov); err != nil {
		return err
	}
	if f == report.Table {
		fmt.Fprintf(stderr, "bailiff: %d of %s listed\n", len(rows), countOf(read, "call"))
	}
	return nil
}

// readCalls reads a verified log's calls again, and refuses what was not
// the log verified: a second read that fails, or ends on another count
// or root, reads a log rewritten in between.
func readCalls(in shadow.Input, ref report.InputRef, fn func(*audit.CallRow) error) error {
	f, err := os.Open(in.File())
	if err != nil {
		return usageErr(fmt.Errorf("cannot read %s: %v", in.Name, unwrapPath(err)), "")
	}
	defer f.Close()
	// Only the bytes verify read: a running gateway may append meanwhile.
	read, err := audit.Calls(in.Name, bufio.NewReaderSize(io.LimitReader(f, ref.Bytes), 1<<20), chain.ReadEvidence(chain.EvidenceDir(in.File())), fn)
	if err == nil {
		err = read.Err
	}
	switch {
	case err != nil:
		return usageErr(fmt.Errorf("cannot list the calls of %s: %v", in.Name, err), "")
	case read.Records != ref.Records || read.Root != ref.Root:
		return usageErr(fmt.Errorf("%s changed while it was read: verified %d records, then read %d with another root", in.Name, ref.Records, read.Records), "run bailiff calls again on a log nothing rewrites")
	}
	return nil
}
