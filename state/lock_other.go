//go:build !unix

package state

import (
	"errors"
	"os"
)

// lockExclusive refuses: without it, two gateways sharing tenant counters
// could each spend what the other spent.
func lockExclusive(*os.File) error {
	return errors.New("file locking is not supported on this system")
}
