package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"bailiff/chain"
	"bailiff/engine"
	"bailiff/report"
	"bailiff/verify"
)

type reportParams struct {
	audit       []string
	policy      string
	tools       []string
	shadow      string
	ablate      string
	since       string
	until       string
	out         string
	html        string
	sarif       string
	generatedAt string
	checkpoint  string
	key         string
	output      output
}

func newReport(stderr io.Writer) *cobra.Command {
	var p reportParams
	c := &cobra.Command{
		Use:   "report --audit LOG... [--policy P] -o pack.md",
		Short: "Write the review pack a compliance reviewer can act on",
		Long: `report reads audit logs (verifying each) and the servers' tool lists, and
writes a Markdown review pack that stands on its own: scope and
provenance, every tool with the controls on it, the audit summary (verdicts
by tool, check and rule; asks and their answers; the destinations denied),
findings by severity, shadow and ablation results when given (the JSON
output of those commands), what the gateway covers and what it does not,
and a mapping of its controls to the OWASP Top 10 lists for LLM
applications (2025), agentic applications (2026) and MCP, with the number
of decisions behind each line.

The pack describes the policy the sessions record they were decided
under. --policy is compared with it: a policy no session was decided
under is shown as a candidate only, with a finding; without a readable
session, --policy is the only policy the pack can describe, and it says so.
-o - writes the Markdown pack to standard output.

--html also writes it as HTML (no script, no raw HTML from the logs: their
content is attacker-controlled); --sarif writes the findings as SARIF
2.1.0 for code scanning. The output depends on the inputs only:
--generated-at sets the date line (default: the last record's day).`,
		Example: `  bailiff report --audit audit.jsonl --policy policy.yaml -o pack.md --html pack.html
  bailiff shadow --candidate new.yaml --format json audit.jsonl > shadow.json
  bailiff report --audit audit.jsonl --policy policy.yaml --tools mail-tools.json --shadow shadow.json -o pack.md --sarif pack.sarif`,
		Args: noArgs(),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if len(p.audit) == 0 || p.out == "" {
				return usageErr(errors.New("report needs --audit and -o"), "bailiff report --audit audit.jsonl -o pack.md")
			}
			n := 0
			for _, o := range []string{p.out, p.html, p.sarif} {
				if o == "-" {
					n++
				}
			}
			if n > 1 {
				return usageErr(errors.New("only one of -o, --html and --sarif can be - (standard output)"), "")
			}
			// -o writes Markdown whatever the name says: a .html file of
			// Markdown would open as a page of source.
			for ext, flag := range map[string]string{".html": "--html", ".htm": "--html", ".sarif": "--sarif"} {
				if strings.EqualFold(filepath.Ext(p.out), ext) {
					return usageErr(fmt.Errorf("-o %s would hold Markdown: -o writes the Markdown pack", p.out), fmt.Sprintf("%s %s writes that format; for example -o pack.md %s %s", flag, p.out, flag, p.out))
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.InOrStdin(), cmd.OutOrStdout(), stderr, p)
		},
	}
	c.Flags().StringArrayVar(&p.audit, "audit", nil, "audit log (repeatable)")
	c.Flags().StringVar(&p.policy, "policy", "", "a policy to compare with the one the logs record (default: theirs)")
	c.Flags().StringArrayVar(&p.tools, "tools", nil, "a server's tools/list answer as JSON (repeatable)")
	c.Flags().StringVar(&p.shadow, "shadow", "", "output of bailiff shadow --format json")
	c.Flags().StringVar(&p.ablate, "ablate", "", "output of bailiff ablate --format json")
	c.Flags().StringVar(&p.since, "since", "", "only records at or after this RFC 3339 time")
	c.Flags().StringVar(&p.until, "until", "", "only records before this RFC 3339 time")
	c.Flags().StringVarP(&p.out, "output", "o", "", "the Markdown pack to write (- for standard output)")
	c.Flags().StringVar(&p.html, "html", "", "also write the pack as HTML (- for standard output)")
	c.Flags().StringVar(&p.sarif, "sarif", "", "also write the findings as SARIF 2.1.0 (- for standard output)")
	c.Flags().StringVar(&p.generatedAt, "generated-at", "", "the date line (default: the last record's day)")
	c.Flags().StringVar(&p.checkpoint, "checkpoint", "", "a signed checkpoint of the (one) log, kept elsewhere")
	c.Flags().StringVar(&p.key, "key", "", "the public key the checkpoints are signed with: --checkpoint's, and those written into the logs")
	p.output.register(c)
	return c
}

func runReport(stdin io.Reader, stdout, stderr io.Writer, p reportParams) error {
	p.output.stdout = stdout
	logs, err := logFiles(p.audit)
	if err != nil {
		return err
	}
	// Every output is checked before any is written, so a refusal leaves
	// no half of a pack.
	inputs := append([]string{p.policy, p.shadow, p.ablate, p.checkpoint, p.key}, p.tools...)
	if err := p.output.check(append(inputs, logs...), p.out, p.html, p.sarif); err != nil {
		return err
	}
	in := report.PackInput{PolicyName: p.policy, Tools: map[string][]engine.ListedTool{}, GeneratedAt: p.generatedAt,
		ShadowFile: p.shadow, AblateFile: p.ablate}
	stdinFile := ""
	for _, l := range logs {
		if l == "-" {
			path, _, done, err := spool(stdin, kindLog)
			defer done()
			if err != nil {
				return err
			}
			noStore(stderr)
			stdinFile = path
			continue
		}
		if err := checkFile(l, kindLog); err != nil {
			return err
		}
	}
	if err := distinctLogs(logs, map[string]string{"-": stdinFile}); err != nil {
		return err
	}
	policy, tools, err := p.readInputs(stdin, &in)
	if err != nil {
		return err
	}
	if err := p.period(&in); err != nil {
		return err
	}
	ckpt, key, err := p.readCheckpoint(stdin, len(logs))
	if err != nil {
		return err
	}
	if ckpt != nil {
		in.Checkpoint = &report.Checkpoint{Size: ckpt.Size, Origin: ckpt.Origin}
	}
	sized := slices.Clone(logs)
	if stdinFile != "" {
		sized = append(sized, stdinFile)
	}
	bar := newProgress(stderr, 2*fileSizes(sized), "report")
	defer bar.Done()
	// Results and a policy that would be refused are refused before any
	// log is read.
	if err := report.CheckInputs(&in); err != nil {
		bar.Done()
		return usageErr(err, "")
	}
	if err := loadPackPolicy(&in, policy, tools); err != nil {
		bar.Done()
		return usageErr(err, "")
	}
	opt := verify.Options{Workers: 1, Checkpoint: ckpt, Key: key}
	in.Logs, in.Summary, err = packLogs(logs, stdinFile, in.Since, in.Until, opt, bar)
	var pack *report.Pack
	if err == nil {
		pack, err = report.BuildPack(in)
	}
	bar.Done()
	if err != nil {
		return usageErr(err, "")
	}
	if err := p.writePack(pack); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "bailiff: %s\n", wroteReport(p, len(pack.Findings)))
	return nil
}

// readInputs reads the shadow and ablate results given into in, and
// returns the policy and tool listings given, as read.
func (p reportParams) readInputs(stdin io.Reader, in *report.PackInput) (policy []byte, tools map[string][]byte, err error) {
	if p.policy != "" {
		if policy, err = readInput(stdin, p.policy, kindPolicy); err != nil {
			return nil, nil, err
		}
	}
	tools = map[string][]byte{}
	for _, t := range p.tools {
		if tools[t], err = readInput(stdin, t, kindListing); err != nil {
			return nil, nil, err
		}
	}
	if p.shadow != "" {
		if in.Shadow, err = readInput(stdin, p.shadow, kindShadow); err != nil {
			return nil, nil, err
		}
	}
	if p.ablate != "" {
		if in.Ablate, err = readInput(stdin, p.ablate, kindShadow); err != nil {
			return nil, nil, err
		}
	}
	return policy, tools, nil
}

// loadPackPolicy loads the --policy and parses the --tools listings
// given, for the pack.
func loadPackPolicy(in *report.PackInput, policy []byte, tools map[string][]byte) error {
	var err error
	if policy != nil {
		if in.Given, err = engine.Load(in.PolicyName, policy); err != nil {
			return err
		}
	}
	for _, file := range slices.Sorted(maps.Keys(tools)) {
		if in.Tools[file], err = engine.ListedTools(tools[file]); err != nil {
			return fmt.Errorf("%s: %v", file, err)
		}
	}
	return nil
}

// period reads --since, --until and --generated-at.
func (p reportParams) period(in *report.PackInput) error {
	var err error
	if in.Since, in.Until, err = parsePeriod(p.since, p.until, false); err != nil {
		return err
	}
	// The date line is printed as given: it must be a date, not text that
	// reads as part of the pack.
	if p.generatedAt != "" {
		if _, err := time.Parse("2006-01-02", p.generatedAt); err != nil {
			return usageErr(fmt.Errorf("--generated-at %q is not a date such as 2026-12-01", p.generatedAt), "")
		}
	}
	return nil
}

// readCheckpoint opens the signed checkpoint given, if any, with the log
// key given (nlogs is how many logs it would be checked against), and
// returns the key too: verify checks the checkpoint records in the logs
// against it, as bailiff verify --key does.
func (p reportParams) readCheckpoint(stdin io.Reader, nlogs int) (*chain.Checkpoint, string, error) {
	if p.checkpoint != "" && (p.key == "" || nlogs != 1) {
		return nil, "", usageErr(errors.New("--checkpoint needs --key and exactly one --audit"), "")
	}
	if p.key == "" {
		return nil, "", nil
	}
	key, err := readPublicKey(stdin, p.key)
	if err != nil {
		return nil, "", err
	}
	if err := wantLogKey(p.key, key); err != nil {
		return nil, "", err
	}
	if p.checkpoint == "" {
		return nil, key, nil
	}
	note, err := readInput(stdin, p.checkpoint, kindCheckpoint)
	if err != nil {
		return nil, "", err
	}
	c, err := chain.OpenCheckpoint(note, key)
	if err != nil {
		return nil, "", findingErr(fmt.Errorf("%s: %v", p.checkpoint, err), checkpointHint(err))
	}
	return &c, key, nil
}

// writePack writes the Markdown pack, and its HTML and SARIF when asked
// for.
func (p reportParams) writePack(pack *report.Pack) error {
	write := p.output.write
	if err := write(p.out, pack.Markdown()); err != nil {
		return err
	}
	if p.html != "" {
		h, err := pack.HTML()
		if err != nil {
			return err
		}
		if err := write(p.html, h); err != nil {
			return err
		}
	}
	if p.sarif != "" {
		if err := write(p.sarif, pack.SARIF()); err != nil {
			return err
		}
	}
	return nil
}

// wroteReport names every file report wrote: the pack, and its HTML and
// SARIF when asked for.
func wroteReport(p reportParams, findings int) string {
	where := func(f string) string {
		if f == "-" {
			return "standard output"
		}
		return f
	}
	msg := fmt.Sprintf("wrote the review pack to %s (%s)", where(p.out), countOf(findings, "finding"))
	var also []string
	if p.html != "" {
		also = append(also, "as HTML to "+where(p.html))
	}
	if p.sarif != "" {
		also = append(also, "its findings as SARIF to "+where(p.sarif))
	}
	switch len(also) {
	case 1:
		msg += " and " + also[0]
	case 2:
		msg += ", " + also[0] + " and " + also[1]
	}
	return msg
}
