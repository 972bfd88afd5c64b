package main

import (
	"fmt"
	"strings"
	"time"

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

// parsePeriod reads --since and --until: RFC 3339 times, and with dates
// also a date, its first instant in UTC. A range that holds nothing is
// refused: it would list or count nothing, and say so confidently.
func parsePeriod(sinceFlag, untilFlag string, dates bool) (since, until time.Time, err error) {
	for _, t := range []struct {
		flag, v string
		dst     *time.Time
	}{{"--since", sinceFlag, &since}, {"--until", untilFlag, &until}} {
		if t.v == "" {
			continue
		}
		if *t.dst, err = time.Parse(time.RFC3339Nano, t.v); err == nil {
			continue
		}
		if !dates {
			return since, until, usageErr(fmt.Errorf("%s %q is not an RFC 3339 time", t.flag, t.v), "")
		}
		if *t.dst, err = time.Parse(time.DateOnly, t.v); err != nil {
			return since, until, usageErr(fmt.Errorf("%s %q is not an RFC 3339 time or a date", t.flag, t.v), "for example 2026-12-01T09:00:00Z, or 2026-12-01 (midnight UTC)")
		}
	}
	if !since.IsZero() && !until.IsZero() && !since.Before(until) {
		return since, until, usageErr(fmt.Errorf("--since %s is not before --until %s: the range holds nothing", sinceFlag, untilFlag), "")
	}
	return since, until, nil
}

// checkServerName refuses a name run cannot give a server, as run and
// lint take it: a rule's server glob and an approval id would not name
// it. A dot is a gateway's separator only: run names a --url server by
// its host.
func checkServerName(flag, name string) error {
	if name == "" || strings.ContainsAny(name, " \t\r\n") {
		return usageErr(fmt.Errorf("%s %q: a server's name is non-empty, with no space", flag, name), "name the server with --server NAME")
	}
	return nil
}
