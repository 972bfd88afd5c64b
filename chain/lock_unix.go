//go:build unix

package chain

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock for the life of f, so a second
// writer fails at once instead of interleaving records.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}
