package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"bailiff/engine"
	"bailiff/replay"
	"bailiff/report"
	"bailiff/shadow"
)

// readInputs expands directories and reads traces; audit logs are
// streamed later.
func readInputs(args []string) ([]shadow.Input, error) {
	files, err := logFiles(args)
	if err != nil {
		return nil, err
	}
	var out []shadow.Input
	for _, f := range files {
		if err := checkFile(f, kindLog, kindTrace); err != nil {
			return nil, err
		}
		in, err := shadow.ReadInput(f)
		if err != nil {
			var se *replay.SyntaxError
			if errors.As(err, &se) {
				return nil, usageErr(err, "see docs/trace-format.md for the trace format")
			}
			return nil, usageErr(fmt.Errorf("cannot read %s: %v", f, unwrapPath(err)), "")
		}
		out = append(out, in)
	}
	return out, nil
}

type shadowParams struct {
	candidate string
	baseline  string
	failOn    []string
	maxChange int
	examples  int
	format    formatFlag
}

func newShadow(stdout io.Writer) *cobra.Command {
	var p shadowParams
	c := &cobra.Command{
		Use:   "shadow --candidate NEW.yaml LOG|TRACE|DIR...",
		Short: "Score a policy change against history: what would it have done?",
		Long: `shadow decides every call of audit logs or traces twice: as the baseline did
(the verdicts recorded in a log, or --baseline's over the same history) and
as the candidate policy would have, on that same history. It counts the
calls unchanged, newly denied, newly asked, newly allowed and unevaluable
(the candidate's verdict depends on a redacted argument or purged output),
by tool, rule and check, with example calls.

Traces have no recorded verdicts and need --baseline. --fail-on
newly-allowed,newly-denied (any categories) exits 1 when more than
--max-changed calls fall in them, for CI. --format markdown is a
pull-request comment.`,
		Example: `  bailiff shadow --candidate new.yaml audit/
  bailiff shadow --baseline old.yaml --candidate new.yaml --format markdown traces/
  bailiff shadow --candidate new.yaml --fail-on newly-allowed audit.jsonl`,
		Args: cobra.MinimumNArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if p.candidate == "" {
				return usageErr(errors.New("shadow needs --candidate"), "bailiff shadow --candidate new.yaml LOG...")
			}
			for _, c := range p.failOn {
				if !contains(shadow.Categories()[1:], c) {
					return usageErr(fmt.Errorf("--fail-on %q is not a category (want %s)", c, strings.Join(shadow.Categories()[1:], ", ")), "")
				}
			}
			_, err := p.format.get()
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runShadow(stdout, p, args)
		},
	}
	c.Flags().StringVar(&p.candidate, "candidate", "", "the policy to score")
	c.Flags().StringVar(&p.baseline, "baseline", "", "the policy to compare with (default: the recorded verdicts)")
	c.Flags().StringSliceVar(&p.failOn, "fail-on", nil, "categories that fail the run: newly-denied, newly-asked, newly-allowed, unevaluable")
	c.Flags().IntVar(&p.maxChange, "max-changed", 0, "how many calls --fail-on categories may hold before the run fails")
	c.Flags().IntVar(&p.examples, "examples", 3, "example calls to show per changed category")
	p.format.register(c)
	return c
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func runShadow(stdout io.Writer, p shadowParams, args []string) error {
	defer offlineMemory()()
	cand, err := loadPolicy(p.candidate, nil)
	if err != nil {
		return err
	}
	var base *engine.Policy
	if p.baseline != "" {
		if base, err = loadPolicy(p.baseline, nil); err != nil {
			return err
		}
	}
	inputs, err := readInputs(args)
	if err != nil {
		return err
	}
	d := shadow.NewDiff(p.examples)
	if err := shadow.Compare(inputs, base, shadow.Fixed(cand), d.Add); err != nil {
		return usageErr(err, "")
	}
	f, _ := p.format.get()
	var out bytes.Buffer
	if err := report.Shadow(&out, f, d); err != nil {
		return err
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		return err
	}
	n := 0
	for _, c := range p.failOn {
		n += d.Counts[c]
	}
	if len(p.failOn) > 0 && n > p.maxChange {
		return &ExitError{Code: exitFinding, Err: fmt.Errorf("%d calls are %s (at most %d allowed)", n, strings.Join(p.failOn, " or "), p.maxChange)}
	}
	return nil
}

type ablateParams struct {
	policy     string
	labels     string
	rules      bool
	minBlock   string
	maxBenign  string
	failOnDead bool
	format     formatFlag
}

func newAblate(stdout io.Writer) *cobra.Command {
	var p ablateParams
	c := &cobra.Command{
		Use:   "ablate [--policy P] LOG|TRACE|DIR...",
		Short: "Switch each check off alone and score what it earns",
		Long: `ablate switches every check off in turn (pinning, scopes, budget, path,
pattern, taint, approval; with --rules every rule too), runs the history
again against the full policy, and reports per check the calls whose
verdict changes and, for calls labelled "attack" or "benign" (in traces,
or for audit logs in a --labels file),
the attacks it alone stops, the attacks stopped anyway, and the benign
calls it costs. A check whose absence changes nothing is dead.

For audit logs the baseline is the recorded verdicts under each session's
policy; traces need --policy. --min-block-rate, --max-benign-loss and
--fail-on-dead make it a CI gate (exit 1).`,
		Example: `  bailiff ablate --policy policy.yaml fixtures/corpus/
  bailiff ablate --policy policy.yaml --rules --min-block-rate 0.95 --fail-on-dead corpus/`,
		Args: cobra.MinimumNArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			for _, r := range []string{p.minBlock, p.maxBenign} {
				if r == "" {
					continue
				}
				if v, err := strconv.ParseFloat(r, 64); err != nil || v < 0 || v > 1 {
					return usageErr(fmt.Errorf("rate %q is not a number from 0 to 1", r), "")
				}
			}
			_, err := p.format.get()
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAblate(stdout, p, args)
		},
	}
	c.Flags().StringVar(&p.policy, "policy", "", "the policy (default: each log session's recorded policy)")
	c.Flags().BoolVar(&p.rules, "rules", false, "also switch off each rule of --policy alone")
	c.Flags().StringVar(&p.labels, "labels", "", `labels for audit log calls: JSON lines of {"session","call","label"}`)
	c.Flags().StringVar(&p.minBlock, "min-block-rate", "", "fail when the policy stops a smaller share of attacks")
	c.Flags().StringVar(&p.maxBenign, "max-benign-loss", "", "fail when the policy stops a larger share of benign calls")
	c.Flags().BoolVar(&p.failOnDead, "fail-on-dead", false, "fail when a check changes nothing")
	p.format.register(c)
	return c
}

func runAblate(stdout io.Writer, p ablateParams, args []string) error {
	defer offlineMemory()()
	var base *engine.Policy
	var rules []string
	var err error
	if p.policy != "" {
		if base, err = loadPolicy(p.policy, nil); err != nil {
			return err
		}
		if p.rules {
			for _, r := range base.Spec().Rules {
				rules = append(rules, r.ID)
			}
		}
	} else if p.rules {
		return usageErr(errors.New("--rules needs --policy"), "")
	}
	inputs, err := readInputs(args)
	if err != nil {
		return err
	}
	var labels shadow.Labels
	if p.labels != "" {
		data, err := readInput(p.labels, kindLabels)
		if err != nil {
			return err
		}
		if labels, err = shadow.ParseLabels(p.labels, data); err != nil {
			return usageErr(err, "")
		}
	}
	scores, tot, err := shadow.Ablation(inputs, base, rules, labels)
	if err != nil {
		return usageErr(err, "")
	}
	f, _ := p.format.get()
	var out bytes.Buffer
	if err := report.Ablation(&out, f, scores, tot); err != nil {
		return err
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		return err
	}
	var fails []string
	if p.minBlock != "" {
		if min, _ := strconv.ParseFloat(p.minBlock, 64); tot.BlockRate() < min {
			fails = append(fails, fmt.Sprintf("the policy stops %.2f of attacks, less than %s", tot.BlockRate(), p.minBlock))
		}
	}
	if p.maxBenign != "" {
		if max, _ := strconv.ParseFloat(p.maxBenign, 64); tot.BenignLoss() > max {
			fails = append(fails, fmt.Sprintf("the policy stops %.2f of benign calls, more than %s", tot.BenignLoss(), p.maxBenign))
		}
	}
	if p.failOnDead {
		for _, s := range scores {
			if s.Dead() {
				fails = append(fails, "check "+s.Name+" is dead")
			}
		}
	}
	if len(fails) > 0 {
		return &ExitError{Code: exitFinding, Err: errors.New(strings.Join(fails, "; "))}
	}
	return nil
}
