package main

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"bailiff/audit"
	"bailiff/engine"
	"bailiff/replay"
	"bailiff/report"
)

type replayParams struct {
	policy  string
	disable []string
	format  formatFlag
}

func newReplay(stdout io.Writer) *cobra.Command {
	var p replayParams
	c := &cobra.Command{
		Use:   "replay --policy POLICY TRACE...",
		Short: "Print the verdict of every call in session traces under a policy",
		Long: `replay evaluates a policy over hand-written session traces (JSONL, one
event per line: start, output, call, grant, tools, end) and prints the
verdict of every call: which check decided, which rule, and why. It is
policy unit testing: the same trace and policy always give the same output.

--disable switches a check off (` + strings.Join(checkNames(), ", ") + `)
or a single rule (rule:ID), to see what it alone stops.`,
		Example: `  bailiff replay --policy policy.yaml session.jsonl
  bailiff replay --policy policy.yaml --format json traces/*.jsonl
  bailiff replay --policy policy.yaml --disable taint session.jsonl`,
		Args: minArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if p.policy == "" {
				return usageErr(errors.New("replay needs --policy"), "bailiff replay --policy policy.yaml TRACE...")
			}
			_, err := p.format.get()
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(cmd.InOrStdin(), stdout, p, args)
		},
	}
	c.Flags().StringVar(&p.policy, "policy", "", "policy file (YAML)")
	c.Flags().StringArrayVar(&p.disable, "disable", nil, "switch off a check or rule:ID (repeatable)")
	p.format.register(c)
	return c
}

func checkNames() []string {
	var s []string
	for _, c := range engine.Switchable() {
		s = append(s, string(c))
	}
	return s
}

func loadPolicy(stdin io.Reader, name string, disable []string) (*engine.Policy, error) {
	data, err := readInput(stdin, name, kindPolicy)
	if err != nil {
		return nil, err
	}
	pol, err := engine.Load(name, data)
	if err != nil {
		return nil, usageErr(err, "")
	}
	if len(disable) > 0 {
		var offs []engine.Off
		for _, d := range disable {
			offs = append(offs, engine.ParseOff(d))
		}
		if pol, err = pol.Without(offs...); err != nil {
			return nil, usageErr(err, "")
		}
	}
	return pol, nil
}

func runReplay(stdin io.Reader, stdout io.Writer, p replayParams, traces []string) error {
	pol, err := loadPolicy(stdin, p.policy, p.disable)
	if err != nil {
		return err
	}
	var all []audit.Outcome
	for _, t := range traces {
		data, err := readInput(stdin, t, kindTrace)
		if err != nil {
			return err
		}
		res, err := replayTrace(pol, t, data)
		if err != nil {
			return err
		}
		all = append(all, res...)
	}
	f, _ := p.format.get()
	var out bytes.Buffer
	if err := report.Verdicts(&out, f, all); err != nil {
		return err
	}
	_, err = stdout.Write(out.Bytes())
	return err
}

func replayTrace(pol *engine.Policy, name string, data []byte) ([]audit.Outcome, error) {
	events, err := replay.ParseTrace(name, bytes.NewReader(data))
	if err != nil {
		return nil, usageErr(err, "see docs/trace-format.md for the trace format")
	}
	res, err := audit.Replay(pol, name, events)
	if err != nil {
		return nil, usageErr(err, "")
	}
	return res, nil
}
