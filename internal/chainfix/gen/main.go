// Command gen rewrites the audit-log fixtures under fixtures/chain.
// Run it from the repository root: go run ./internal/chainfix/gen
package main

import (
	"fmt"
	"os"

	"bailiff/internal/chainfix"
)

func main() {
	if err := chainfix.Generate("fixtures/chain"); err != nil {
		fmt.Fprintf(os.Stderr, "gen: error: %v\n", err)
		os.Exit(1)
	}
}
