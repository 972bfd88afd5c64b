package chain

import (
	"os"
	"syscall"
)

// punchHole frees the blocks of n bytes at off, which then read as
// zeroes, keeping the file's size.
func punchHole(f *os.File, off, n int64) error {
	const keepSize, punch = 0x1, 0x2 // FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE
	return syscall.Fallocate(int(f.Fd()), keepSize|punch, off, n)
}
