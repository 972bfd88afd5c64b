package main

import (
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
