//go:build unix

package state

import (
	"os"
	"syscall"
)

// lockExclusive waits for an exclusive advisory lock on f, held until f
// is closed.
func lockExclusive(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}
