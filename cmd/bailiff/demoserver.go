package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"bailiff/internal/demo"
)

// newDemoServer is the demo's MCP server on stdio, which demo starts
// behind bailiff run. It is hidden: it has no use of its own.
func newDemoServer(stdin io.Reader, stdout io.Writer) *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:     "demo-server --dir DIR",
		Short:   "The demo's MCP server (started by bailiff demo)",
		Hidden:  true,
		Example: "  bailiff demo-server --dir /tmp/bailiff-demo-1/office",
		Args:    noArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usageErr(errors.New("demo-server needs --dir"), "bailiff demo starts it")
			}
			return demo.Serve(context.Background(), demo.Layout{Dir: dir}, stdin, stdout)
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "the demo directory")
	return c
}

// demoDir makes the demo's directory: the one named, which must be new
// or empty (a demo never writes over anything), or a new temporary one.
// A directory others may write to is refused too: one of them could put
// a symlink where the demo is about to write, and the demo would write
