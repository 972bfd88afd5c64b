package main

import (
	"io"

	"github.com/spf13/cobra"
)

func newPolicy(stdout io.Writer) *cobra.Command {
	c := &cobra.Command{
		Use:   "policy",
		Short: "Check and convert policy files",
	}
	return c
}
