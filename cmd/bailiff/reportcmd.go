package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"bailiff/chain"
	"bailiff/report"
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
}

func newReport(stderr io.Writer) *cobra.Command {
	var p reportParams
	c := &cobra.Command{
		Use:   "report --audit LOG... --policy P -o pack.md",
		Short: "Write the review pack a compliance reviewer can act on",
		Long: `report reads audit logs (verifying each), the policy and the servers' tool
lists, and writes a Markdown review pack that stands on its own: scope and
provenance, every tool with the controls on it, the audit summary (verdicts
by tool, check and rule; asks and their answers; the destinations denied),
findings by severity, shadow and ablation results when given (the JSON
output of those commands), what the gateway covers and what it does not,
and a mapping of its controls to the OWASP Top 10 lists for LLM
applications (2025), agentic applications (2026) and MCP, with the number
of decisions behind each line.

--html also writes it as HTML (no script, no raw HTML from the logs: their
content is attacker-controlled); --sarif writes the findings as SARIF
2.1.0 for code scanning. The output depends on the inputs only:
--generated-at sets the date line (default: the last record's day).`,
		Example: `  bailiff report --audit audit.jsonl --policy policy.yaml -o pack.md --html pack.html
  bailiff shadow --candidate new.yaml --format json audit.jsonl > shadow.json
  bailiff report --audit audit.jsonl --policy policy.yaml --tools mail-tools.json --shadow shadow.json -o pack.md --sarif pack.sarif`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if len(p.audit) == 0 || p.policy == "" || p.out == "" {
				return usageErr(errors.New("report needs --audit, --policy and -o"), "bailiff report --audit audit.jsonl --policy policy.yaml -o pack.md")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(stderr, p)
		},
	}
	c.Flags().StringArrayVar(&p.audit, "audit", nil, "audit log (repeatable)")
	c.Flags().StringVar(&p.policy, "policy", "", "the policy the logs were decided under")
	c.Flags().StringArrayVar(&p.tools, "tools", nil, "a server's tools/list answer as JSON (repeatable)")
	c.Flags().StringVar(&p.shadow, "shadow", "", "output of bailiff shadow --format json")
	c.Flags().StringVar(&p.ablate, "ablate", "", "output of bailiff ablate --format json")
	c.Flags().StringVar(&p.since, "since", "", "only records at or after this RFC 3339 time")
	c.Flags().StringVar(&p.until, "until", "", "only records before this RFC 3339 time")
	c.Flags().StringVarP(&p.out, "output", "o", "", "the Markdown pack to write")
	c.Flags().StringVar(&p.html, "html", "", "also write the pack as HTML")
	c.Flags().StringVar(&p.sarif, "sarif", "", "also write the findings as SARIF 2.1.0")
	c.Flags().StringVar(&p.generatedAt, "generated-at", "", "the date line (default: the last record's day)")
	c.Flags().StringVar(&p.checkpoint, "checkpoint", "", "a signed checkpoint of the (one) log, kept elsewhere")
	c.Flags().StringVar(&p.key, "key", "", "the public key the checkpoint is signed with")
	return c
}

func runReport(stderr io.Writer, p reportParams) error {
	in := report.PackInput{Logs: p.audit, PolicyName: p.policy, Tools: map[string][]byte{}, GeneratedAt: p.generatedAt}
	var err error
	if in.PolicyData, err = readFile(p.policy); err != nil {
		return err
	}
	for _, t := range p.tools {
		if in.Tools[t], err = readFile(t); err != nil {
			return err
		}
	}
	if p.shadow != "" {
		if in.Shadow, err = readFile(p.shadow); err != nil {
			return err
		}
	}
	if p.ablate != "" {
		if in.Ablate, err = readFile(p.ablate); err != nil {
			return err
		}
	}
	for _, t := range []struct {
		flag, v string
		dst     *time.Time
	}{{"--since", p.since, &in.Since}, {"--until", p.until, &in.Until}} {
		if t.v == "" {
			continue
		}
		if *t.dst, err = time.Parse(time.RFC3339Nano, t.v); err != nil {
			return usageErr(fmt.Errorf("%s %q is not an RFC 3339 time", t.flag, t.v), "")
		}
	}
	if p.checkpoint != "" {
		if p.key == "" || len(p.audit) != 1 {
			return usageErr(errors.New("--checkpoint needs --key and exactly one --audit"), "")
		}
		key, err := readPublicKey(p.key)
		if err != nil {
			return err
		}
		note, err := readFile(p.checkpoint)
		if err != nil {
			return err
		}
		c, err := chain.OpenCheckpoint(note, key)
		if err != nil {
			return &ExitError{Code: exitFinding, Err: fmt.Errorf("%s: %v", p.checkpoint, err), Hint: "a checkpoint that does not verify proves nothing about the log"}
		}
		in.Checkpoint = &c
	}
	pack, err := report.BuildPack(in)
	if err != nil {
		return usageErr(err, "")
	}
	if err := writeOutput(p.out, pack.Markdown()); err != nil {
		return err
	}
	if p.html != "" {
		h, err := pack.HTML()
		if err != nil {
			return err
		}
		if err := writeOutput(p.html, h); err != nil {
			return err
		}
	}
	if p.sarif != "" {
		if err := writeOutput(p.sarif, pack.SARIF()); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "bailiff: wrote the review pack to %s (%d findings)\n", p.out, len(pack.Findings))
	return nil
}
