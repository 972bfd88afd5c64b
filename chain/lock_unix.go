//go:build unix

package chain

import (
	"errors"
	"fmt"
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

// InUse tells whether a writer holds the log at name open for appending.
func InUse(name string) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	return writerHolds(f)
}

// writerHolds tries a shared lock through f, an open of its own: it is
// refused while a writer holds the exclusive one.
func writerHolds(f *os.File) bool {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// HeldByWriter tells whether a writer holds the log open as f open for
// appending, whatever name it now has: a follower that saw the log
// renamed away (rotated) reads it until its writer lets go.
func HeldByWriter(f *os.File) bool {
	// A lock taken through another open of the same file, since f's own
	// open file description may already hold one. /proc reaches the file
	// even renamed or removed; elsewhere its name is the best there is.
	g, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		g, err = os.Open(f.Name())
		if err != nil {
			return false
		}
	}
	defer g.Close()
	return writerHolds(g)
}
