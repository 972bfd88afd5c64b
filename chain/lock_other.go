//go:build !unix

package chain

import (
	"errors"
	"os"
)

// lockFile refuses: without a lock two writers could interleave records,
// and a log that cannot be locked is not one to write.
func lockFile(*os.File) error {
	return errors.New("file locking is not supported on this system")
}

// InUse cannot tell here, and says no: a torn tail is then reported.
func InUse(string) bool { return false }

// HeldByWriter cannot tell here, and says no: a rotated log is then read
// to its end once.
func HeldByWriter(*os.File) bool { return false }
