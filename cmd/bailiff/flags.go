package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"bailiff/report"
)

type formatFlag struct{ value string }

func (f *formatFlag) register(c *cobra.Command) {
	c.Flags().StringVar(&f.value, "format", "", "output format: table, json or markdown (default table)")
	completeValues(c, "format", string(report.Table), string(report.JSON), string(report.Markdown))
}

// completeValues has the shell complete a flag with the values it takes,
// not with file names.
func completeValues(c *cobra.Command, flag string, values ...string) {
	_ = c.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

func (f *formatFlag) get() (report.Format, error) {
	if f.value == "" {
		return report.Table, nil
	}
	r, err := report.ParseFormat(f.value)
	if err != nil {
		return "", usageErr(err, "json is for scripts, markdown for a page, table (the default) for a terminal")
	}
	return r, nil
}

// gateVerified refuses a CI gate over logs that fail verify: its exit
// code is believed by whoever reads only the code, and it would pass or
// fail on what the logs record, forged verdicts included.
func gateVerified(prov *report.Provenance) error {
	if len(prov.Unverified) == 0 {
		return nil
	}
	return usageErr(fmt.Errorf("a gate cannot stand on logs that fail verify (%s)", oneLine(prov.Unverified[0])),
		"--allow-unverified is for reading such a log, not for gating on it: verify the logs, or drop the gate")
}

// countOf is n and the noun, plural unless n is 1.
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
