package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"bailiff/engine"
	"bailiff/report"
	"bailiff/shadow"

	"github.com/spf13/cobra"
)

type ablateParams struct {
	policy     string
	labels     string
	rules      bool
	minBlock   string
	maxBenign  string
	maxDenied  string
	failOnDead bool
	checks     []string // what --fail-on-dead covers; none: every one scored
	unverified bool
	format     formatFlag
}

// parseRate reads a rate flag: a share from 0 to 1. NaN is refused too,
// since it compares false with everything and would never trip a gate.
func parseRate(flag, s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0 && v <= 1) {
		return 0, usageErr(fmt.Errorf("--%s wants a number from 0 to 1, not %q", flag, s), "a rate is a share of the calls: 95% is --"+flag+" 0.95")
	}
	return v, nil
}

func newAblate(stdout, stderr io.Writer) *cobra.Command {
	var p ablateParams
	c := &cobra.Command{
		Use:   "ablate [--policy P] LOG|TRACE|DIR...",
		Short: "Switch each check off alone and score what it earns",
		Long: `ablate switches every check off in turn (pinning, scopes, budget,
tenant-budget and rate where a policy configures them, path, pattern,
taint, approval; with --rules every rule too), runs the history
again against the full policy, and reports per check the calls whose
verdict changes and, for calls labelled "attack" or "benign" (in traces,
or for audit logs in a --labels file),
the attacks it alone stops, the attacks stopped anyway, and the benign
calls it costs. DECIDED counts the calls the check (or rule) decided. A
check that decided no call and whose absence changes nothing is dead; one
that decided calls whose absence still changes nothing "earned nothing
alone" (approval, typically: with it off an answer still answers,
unchecked, and well-bound answers read the same), and is not dead.

For audit logs the baseline is the recorded verdicts under each session's
policy. Traces need --policy, and so does --rules, on any input: the
rules switched off are --policy's. An audit log must pass bailiff verify
first; --allow-unverified uses one that does not, and every output format
then says UNVERIFIED. --min-block-rate, --max-benign-loss,
--max-benign-denied and --fail-on-dead make it a CI gate (exit 1): a
stop is an ask or a deny, and --max-benign-denied counts denies alone,
the loss no human can answer away. --checks path,approval names the
checks (and rule:ID with --rules) --fail-on-dead covers: a filesystem
policy's taint and pattern checks can never fire, and need not fail the
gate. A gate with nothing to measure (no attack calls, no benign calls,
no calls) is an error (exit 2).`,
		Example: `  bailiff ablate --policy policy.yaml fixtures/corpus/
  bailiff ablate --policy policy.yaml --rules --min-block-rate 0.95 --fail-on-dead corpus/
  bailiff ablate --fail-on-dead --checks path,approval,budget audit.jsonl`,
		Args: minArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			for _, r := range []struct{ flag, value string }{{"min-block-rate", p.minBlock}, {"max-benign-loss", p.maxBenign}, {"max-benign-denied", p.maxDenied}} {
				if cmd.Flags().Changed(r.flag) {
					if _, err := parseRate(r.flag, r.value); err != nil {
						return err
					}
				}
			}
			if err := p.checkChecks(); err != nil {
				return err
			}
			_, err := p.format.get()
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAblate(cmd.InOrStdin(), stdout, stderr, p, args)
		},
	}
	c.Flags().StringVar(&p.policy, "policy", "", "the policy (default: each log session's recorded policy; traces and --rules need it)")
	c.Flags().BoolVar(&p.rules, "rules", false, "also switch off each rule of --policy alone (needs --policy)")
	c.Flags().StringVar(&p.labels, "labels", "", `labels for audit log calls: JSON lines of {"session","call","label"}`)
	c.Flags().StringVar(&p.minBlock, "min-block-rate", "", "fail when the policy stops a smaller share of attacks")
	c.Flags().StringVar(&p.maxBenign, "max-benign-loss", "", "fail when the policy stops a larger share of benign calls")
	c.Flags().StringVar(&p.maxDenied, "max-benign-denied", "", "fail when the policy denies a larger share of benign calls (asks not counted)")
	c.Flags().BoolVar(&p.failOnDead, "fail-on-dead", false, "fail when a check is dead: it decided no call, and switching it off changes none")
	c.Flags().StringSliceVar(&p.checks, "checks", nil, "the checks --fail-on-dead covers, comma-separated: "+strings.Join(checkNames(), ", ")+", or rule:ID with --rules (default: every one scored)")
	c.Flags().BoolVar(&p.unverified, "allow-unverified", false, "use audit logs that fail verify (the output says UNVERIFIED)")
	completeValues(c, "checks", checkNames()...)
	p.format.register(c)
	return c
}

func runAblate(stdin io.Reader, stdout, stderr io.Writer, p ablateParams, args []string) error {
	defer offlineMemory()()
	var base *engine.Policy
	var rules []string
	var err error
	if p.policy != "" {
		if base, err = loadPolicy(stdin, p.policy, nil); err != nil {
			return err
		}
		if p.rules {
			for _, r := range base.Spec().Rules {
				rules = append(rules, r.ID)
			}
		}
		for _, c := range p.checks {
			// A gate over a rule the policy lacks would pass unmeasured.
			if id, ok := strings.CutPrefix(c, "rule:"); ok && !slices.Contains(rules, id) {
				return usageErr(fmt.Errorf("--checks %s names no rule of %s", c, p.policy), "")
			}
		}
	} else if p.rules {
		return usageErr(errors.New("--rules needs --policy"), "")
	}
	inputs, cleanup, err := readInputs(stdin, stderr, args)
	defer cleanup()
	if err != nil {
		return err
	}
	var labels shadow.Labels
	if p.labels != "" {
		data, err := readInput(stdin, p.labels, kindLabels)
		if err != nil {
			return err
		}
		if labels, err = shadow.ParseLabels(p.labels, data); err != nil {
			return usageErr(err, "")
		}
	}
	// Every variant is scored in one pass: with the recorded verdicts as
	// the baseline, the pass that verifies the log.
	inPass := base == nil && !p.unverified
	passes := 2
	if inPass {
		passes = 1
	}
	bar := logProgress(stderr, inputs, passes, "ablate")
	defer bar.Done()
	prov, err := verifyLogs(stderr, inputs, p.unverified, inPass, bar)
	if err != nil {
		return err
	}
	if p.minBlock != "" || p.maxBenign != "" || p.maxDenied != "" || p.failOnDead {
		if err := gateVerified(prov); err != nil {
			return err
		}
	}
	scores, tot, err := shadow.Ablation(inputs, base, rules, labels)
	if err != nil {
		return compareErr(err)
	}
	bar.Done()
	if err := gateMeasures(p, scores, tot); err != nil {
		return err
	}
	if tot.Attacks == 0 && tot.Benign == 0 && tot.Calls > 0 {
		// Zeros in those columns otherwise read as a measurement.
		fmt.Fprintln(stderr, "bailiff: note: no call of the input is labelled attack or benign, so the attack and benign columns count nothing: label calls with --labels FILE (JSON lines of session, call and label)")
	}
	f, _ := p.format.get()
	var out bytes.Buffer
	if err := report.Ablation(&out, f, scores, tot, *prov); err != nil {
		return err
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		return err
	}
	return gateFailures(p, scores, tot)
}

// covers tells whether --fail-on-dead judges the check: every one when
// --checks names none.
func (p ablateParams) covers(check string) bool {
	return len(p.checks) == 0 || slices.Contains(p.checks, check)
}

// checkChecks refuses --checks that gate nothing: without --fail-on-dead,
// or naming no check ablate scores.
func (p ablateParams) checkChecks() error {
	if len(p.checks) == 0 {
		return nil
	}
	for _, c := range p.checks {
		if rule, ok := strings.CutPrefix(c, "rule:"); ok && rule != "" {
			if !p.rules {
				return usageErr(fmt.Errorf("--checks %s names a rule, and rules are scored with --rules (which needs --policy)", c), "")
			}
			continue
		}
		if !slices.Contains(checkNames(), c) {
			return usageErr(fmt.Errorf("--checks %q is not a check ablate switches off (want %s, or rule:ID with --rules)", c, strings.Join(checkNames(), ", ")), "")
		}
	}
	if !p.failOnDead {
		return usageErr(errors.New("--checks names the checks --fail-on-dead covers, and needs it"), "bailiff ablate --fail-on-dead --checks path,approval LOG")
	}
	return nil
}

// gateFailures names every gate the scores fail, so one CI run shows all
// of them rather than the first.
func gateFailures(p ablateParams, scores []shadow.Score, tot shadow.Totals) error {
	var fails []string
	if p.minBlock != "" {
		if min, _ := parseRate("min-block-rate", p.minBlock); tot.BlockRate() < min {
			fails = append(fails, fmt.Sprintf("the policy stops %.2f of attacks, less than %s", tot.BlockRate(), p.minBlock))
		}
	}
	if p.maxBenign != "" {
		if max, _ := parseRate("max-benign-loss", p.maxBenign); tot.BenignLoss() > max {
			fails = append(fails, fmt.Sprintf("the policy stops %.2f of benign calls, more than %s", tot.BenignLoss(), p.maxBenign))
		}
	}
	if p.maxDenied != "" {
		if max, _ := parseRate("max-benign-denied", p.maxDenied); tot.BenignDenial() > max {
			fails = append(fails, fmt.Sprintf("the policy denies %.2f of benign calls, more than %s", tot.BenignDenial(), p.maxDenied))
		}
	}
	if p.failOnDead {
		var dead []string
		for _, s := range scores {
			if s.Dead() && p.covers(s.Name) {
				dead = append(dead, s.Name)
			}
		}
		switch {
		case len(dead) == 1:
			fails = append(fails, "check "+dead[0]+" is dead: it decided no call, and switching it off changes none")
		case len(dead) > 1:
			fails = append(fails, "checks "+strings.Join(dead, ", ")+" are dead: each decided no call, and switching it off changes none")
		}
	}
	if len(fails) > 0 {
		return findingErr(errors.New(strings.Join(fails, "; ")), "")
	}
	return nil
}

// gateMeasures refuses a gate over nothing: a block rate over no attacks
// or a benign loss over no benign calls would pass any threshold, and a
// CI gate that passes without measuring is silently wrong.
func gateMeasures(p ablateParams, scores []shadow.Score, tot shadow.Totals) error {
	const hint = `label calls "attack" or "benign" in traces, or for audit logs with --labels`
	switch {
	case (p.minBlock != "" || p.maxBenign != "" || p.maxDenied != "" || p.failOnDead) && tot.Calls == 0:
		return usageErr(errors.New("the gates have nothing to measure: the input holds no calls"), "")
	case p.minBlock != "" && tot.Attacks == 0:
		return usageErr(fmt.Errorf("--min-block-rate has nothing to measure: no call is labelled attack (%s compared)", countOf(tot.Calls, "call")), hint)
	case p.maxBenign != "" && tot.Benign == 0:
		return usageErr(fmt.Errorf("--max-benign-loss has nothing to measure: no call is labelled benign (%s compared)", countOf(tot.Calls, "call")), hint)
	case p.maxDenied != "" && tot.Benign == 0:
		return usageErr(fmt.Errorf("--max-benign-denied has nothing to measure: no call is labelled benign (%s compared)", countOf(tot.Calls, "call")), hint)
	}
	if p.failOnDead {
		// A check that decided nothing and changed nothing, but under
		// which some calls could not be decided again, may be alive: its
		// absence could have changed exactly those calls.
		for _, s := range scores {
			if s.Unmeasured() && p.covers(s.Name) {
				return usageErr(fmt.Errorf("--fail-on-dead cannot judge check %s: %s could not be decided again without it (they depended on redacted or purged input)", s.Name, countOf(s.Uneval, "call")),
					"give the log by its path, with its evidence store beside it (a log on standard input has none), or leave the check out with --checks")
			}
		}
	}
	return nil
}
