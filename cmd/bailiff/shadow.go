package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
	"bailiff/report"
	"bailiff/shadow"
)

// readInputs expands directories and reads traces; audit logs are
// streamed later.
func readInputs(stdin io.Reader, stderr io.Writer, args []string) (inputs []shadow.Input, cleanup func(), err error) {
	cleanup = func() {}
	files, err := logFiles(args)
	if err != nil {
		return nil, cleanup, err
	}
	var out []shadow.Input
	for _, f := range files {
		if f == "-" {
			in, done, err := spoolStdin(stdin, stderr)
			if err != nil {
				return nil, cleanup, err
			}
			cleanup = done
			out = append(out, in)
			continue
		}
		if err := checkFile(f, kindLog, kindTrace); err != nil {
			return nil, cleanup, err
		}
		in, err := shadow.ReadInput(f)
		if err != nil {
			var se *replay.SyntaxError
			if errors.As(err, &se) {
				return nil, cleanup, usageErr(err, "see docs/trace-format.md for the trace format")
			}
			return nil, cleanup, usageErr(fmt.Errorf("cannot read %s: %v", f, unwrapPath(err)), "")
		}
		out = append(out, in)
	}
	names, spooled := []string{}, map[string]string{}
	for _, in := range out {
		names = append(names, in.Name)
		spooled[in.Name] = in.File()
	}
	if err := distinctLogs(names, spooled); err != nil {
		return nil, cleanup, err
	}
	return out, cleanup, nil
}

// spoolStdin reads an input given as "-". A trace is parsed at once; an
// audit log is written to a temporary file, since it is verified and then
// compared (ablate compares it once per check). It has no evidence store,
// so every output it refers to counts as purged, as verify - says.
func spoolStdin(stdin io.Reader, stderr io.Writer) (shadow.Input, func(), error) {
	path, kind, done, err := spool(stdin, kindLog, kindTrace)
	if err != nil {
		return shadow.Input{}, done, err
	}
	if kind == kindTrace {
		defer done()
		f, err := os.Open(path)
		if err != nil {
			return shadow.Input{}, func() {}, usageErr(fmt.Errorf("cannot read the spooled standard input: %v", err), "")
		}
		defer f.Close()
		events, err := replay.ParseTrace("-", bufio.NewReader(f))
		if err != nil {
			return shadow.Input{}, func() {}, usageErr(err, "see docs/trace-format.md for the trace format")
		}
		return shadow.Input{Name: "-", Trace: events}, func() {}, nil
	}
	noStore(stderr)
	return shadow.Input{Name: "-", Path: path}, done, nil
}

func noStore(stderr io.Writer) {
	fmt.Fprintf(stderr, "bailiff: warning: a log on standard input has no evidence store: every tool output counts as purged\n")
}

// spool copies standard input to a temporary file, for a command that
// reads it more than once, streaming it so that memory does not grow
// with it, once its first bytes show one of the kinds wanted. No evidence
// store is beside the copy: every output a log refers to counts as
// purged, never as altered.
func spool(stdin io.Reader, want ...fileKind) (path string, kind fileKind, done func(), err error) {
	done = func() {}
	in, err := openInput(stdin, "-", want...)
	if err != nil {
		return "", "", done, err
	}
	defer in.Close()
	br := bufio.NewReaderSize(in, sniffSize)
	head, _ := br.Peek(sniffSize)
	kind = sniff(head)
	dir, err := os.MkdirTemp("", "bailiff-stdin")
	if err != nil {
		return "", "", done, usageErr(err, "")
	}
	done = func() { os.RemoveAll(dir) }
	path = filepath.Join(dir, "stdin.jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		_, err = io.Copy(f, br)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		done()
		return "", "", func() {}, usageErr(fmt.Errorf("cannot spool standard input: %v", err), "")
	}
	return path, kind, done, nil
}

// comparable reads a log's sessions as shadow and ablate do, and returns
// what stops them: a log that fails verify may still be unusable (a
// session whose policy does not load).
func comparable(in shadow.Input) error {
	f, err := os.Open(in.File())
	if err != nil {
		return err
	}
	defer f.Close()
	return audit.LogSessions(in.Name, bufio.NewReaderSize(f, 1<<20), chain.ReadEvidence(chain.EvidenceDir(in.File())),
		func(audit.LogSession) error { return nil })
}

// oneLine keeps a reason taken from a log on the one line an error has.
func oneLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
}

type shadowParams struct {
	candidate  string
	baseline   string
	identity   string // candidate identity settings
	failOn     []string
	maxChange  int
	examples   int
	unverified bool
	format     formatFlag
}

func newShadow(stdout, stderr io.Writer) *cobra.Command {
	var p shadowParams
	c := &cobra.Command{
		Use:   "shadow --candidate NEW.yaml LOG|TRACE|DIR...",
		Short: "Score a policy change against history: what would it have done?",
		Long: `shadow decides every call of audit logs or traces twice: as the baseline did
(the verdicts recorded in a log, or --baseline's over the same history) and
as the candidate policy would have, on that same history. It counts the
calls unchanged, newly denied, newly asked, newly allowed and unevaluable
(the candidate's verdict depends on a redacted argument or purged output),
by tool, rule and check, and lists every changed call with its arguments
as recorded (a value the policy redacts is not in the log; its path is
named); --examples N lists at most N of each category. Table and Markdown
cut the arguments at 160 characters; JSON has them whole.

Traces have no recorded verdicts and need --baseline. An audit log must
pass bailiff verify first; --allow-unverified uses one that does not, and
every output format then says UNVERIFIED. --fail-on
newly-allowed,newly-denied (any categories) exits 1 when more than
--max-changed calls fall in them, for CI. --format markdown is a
pull-request comment.`,
		Example: `  bailiff shadow --candidate new.yaml audit/
  bailiff shadow --baseline old.yaml --candidate new.yaml --format markdown traces/
  bailiff shadow --candidate new.yaml --fail-on newly-allowed audit.jsonl`,
		Args: minArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if p.candidate == "" {
				return usageErr(errors.New("shadow needs --candidate"), "bailiff shadow --candidate new.yaml LOG...")
			}
			for _, c := range p.failOn {
				if !slices.Contains(shadow.Categories()[1:], c) {
					return usageErr(fmt.Errorf("--fail-on %q is not a category (want %s)", c, strings.Join(shadow.Categories()[1:], ", ")), "")
				}
			}
			if cmd.Flags().Changed("max-changed") && len(p.failOn) == 0 {
				return usageErr(errors.New("--max-changed needs --fail-on, the categories it counts"), "for example: --fail-on newly-allowed,newly-denied --max-changed 3")
			}
			if p.maxChange < 0 {
				return usageErr(fmt.Errorf("--max-changed wants a count of 0 or more, not %d", p.maxChange), "")
			}
			if p.examples < 0 {
				return usageErr(fmt.Errorf("--examples wants a count of 0 or more, not %d", p.examples), "")
			}
			if !cmd.Flags().Changed("examples") {
				p.examples = -1 // every changed call
			}
			_, err := p.format.get()
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runShadow(cmd.InOrStdin(), stdout, stderr, p, args)
		},
	}
	c.Flags().StringVar(&p.candidate, "candidate", "", "the policy to score")
	c.Flags().StringVar(&p.identity, "candidate-identity", "", "identity settings (an identity file, or a gateway config's identity: section) whose groups and base_scopes regrant the scopes of every session a verified token opened, from the groups the token presented")
	c.Flags().StringVar(&p.baseline, "baseline", "", "the policy to compare with (default: the recorded verdicts)")
	c.Flags().StringSliceVar(&p.failOn, "fail-on", nil, "categories that fail the run: newly-denied, newly-asked, newly-allowed, unevaluable")
	completeValues(c, "fail-on", shadow.Categories()[1:]...)
	c.Flags().IntVar(&p.maxChange, "max-changed", 0, "how many calls --fail-on categories may hold before the run fails")
	c.Flags().IntVar(&p.examples, "examples", 0, "show at most this many changed calls per category (default: every changed call)")
	c.Flags().BoolVar(&p.unverified, "allow-unverified", false, "use audit logs that fail verify (the output says UNVERIFIED)")
	p.format.register(c)
	return c
}

// spillHint is what to do when the changed calls could not be kept.
const spillHint = "shadow keeps every changed call in a temporary file: set TMPDIR to a directory with room, or give --examples N to keep N of each kind in memory"

func runShadow(stdin io.Reader, stdout, stderr io.Writer, p shadowParams, args []string) error {
	defer offlineMemory()()
	cand, err := loadPolicy(stdin, p.candidate, nil)
	if err != nil {
		return err
	}
	var base *engine.Policy
	if p.baseline != "" {
		if base, err = loadPolicy(stdin, p.baseline, nil); err != nil {
			return err
		}
	}
	inputs, cleanup, err := readInputs(stdin, stderr, args)
	defer cleanup()
	if err != nil {
		return err
	}
	// Against its recorded verdicts, a log is verified in the pass that
	// compares it; a baseline policy needs a pass of its own.
	inPass := base == nil && !p.unverified
	passes := 2
	if inPass {
		passes = 1
	}
	bar := logProgress(stderr, inputs, passes, "shadow")
	defer bar.Done()
	prov, err := verifyLogs(stderr, inputs, p.unverified, inPass, bar)
	if err != nil {
		return err
	}
	if len(p.failOn) > 0 {
		if err := gateVerified(prov); err != nil {
			return err
		}
	}
	prov.Candidate = &report.PolicyRef{File: p.candidate, Name: cand.Spec().Name, Version: cand.Version()}
	remap, regranted, err := candidateIdentity(stdin, p.identity)
	if err != nil {
		return err
	}
	prov.CandidateIdentity = p.identity
	d := shadow.NewDiff(p.examples)
	defer d.Close()
	if err := shadow.CompareAs(inputs, base, shadow.Fixed(cand), remap, d.Add); err != nil {
		return compareErr(err)
	}
	if err := d.Err(); err != nil {
		return usageErr(err, spillHint)
	}
	if regranted != nil {
		if err := regranted.check(); err != nil {
			return err
		}
	}
	bar.Done()
	if len(p.failOn) > 0 && d.Calls == 0 {
		return usageErr(errors.New("--fail-on has nothing to measure: the input holds no calls"), "")
	}
	f, _ := p.format.get()
	// Every changed call is listed, so the listing is streamed: held
	// whole it would grow with history.
	if err := report.Shadow(stdout, f, d, *prov); err != nil {
		return usageErr(fmt.Errorf("the output above is incomplete: %w", err), spillHint)
	}
	n := 0
	for _, c := range p.failOn {
		n += d.Counts[c]
	}
	if len(p.failOn) > 0 && n > p.maxChange {
		verb := "are"
		if n == 1 {
			verb = "is"
		}
		return findingErr(fmt.Errorf("%s %s %s (at most %d allowed)", countOf(n, "call"), verb, strings.Join(p.failOn, " or "), p.maxChange), "")
	}
	return nil
}
