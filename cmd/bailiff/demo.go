package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"bailiff/engine"
	"bailiff/report"
)

//go:embed demo/policy.yaml
var demoPolicy []byte

//go:embed demo/hijacked.jsonl
var demoTrace []byte

func newDemo(stdout io.Writer) *cobra.Command {
	var format formatFlag
	c := &cobra.Command{
		Use:   "demo",
		Short: "Replay a hijacked agent's session under a built-in policy",
		Long: `demo replays a built-in session in which a mail assistant reads an email
carrying injected instructions and then tries to send the user's data to
the attacker, rewrite its own tools, and write outside its sandbox. It
prints the verdict bailiff gives every call, and needs nothing but this
binary.`,
		Example: `  bailiff demo
  bailiff demo --format json`,
		Args: noArgs(),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			_, err := format.get()
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			pol, err := engine.Load("demo/policy.yaml", demoPolicy)
			if err != nil {
				return err
			}
			res, err := replayTrace(pol, "demo/hijacked.jsonl", demoTrace)
			if err != nil {
				return err
			}
			f, _ := format.get()
			var out bytes.Buffer
			if f == report.Table {
				fmt.Fprintf(&out, "bailiff demo: a mail assistant reads an injected email (policy %s)\n\n", pol.Version()[:19])
			}
			if err := report.Verdicts(&out, f, res); err != nil {
				return err
			}
			_, err = stdout.Write(out.Bytes())
			return err
		},
	}
	format.register(c)
	return c
}
