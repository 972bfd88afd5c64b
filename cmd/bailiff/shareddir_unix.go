//go:build unix

package main

import (
	"os"
	"syscall"
)

// sharedDir says why others could write into a directory: it is group or
// world writable, or another user owns it; "" when neither.
func sharedDir(fi os.FileInfo) string {
	if fi.Mode().Perm()&0o022 != 0 {
		return "is writable by others"
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return "belongs to another user"
	}
	return ""
}
