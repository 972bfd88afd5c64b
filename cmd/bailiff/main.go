// Command bailiff is a deterministic gateway for MCP tool calls and an
// offline toolkit for the audit logs it writes. Run `bailiff --help`.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
