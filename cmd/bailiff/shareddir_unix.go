//go:build unix

package main

import (
	"os"
	"path/filepath"
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

// sharedAncestor names an ancestor of dir (symlinks resolved) through
// which someone else could swap dir for a symlink: one owned by another
// user (root aside), or writable by others without the sticky bit that
// keeps them from renaming what is not theirs (as /tmp has).
func sharedAncestor(dir string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	for p := real; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		switch {
		case ok && int(st.Uid) != os.Getuid() && st.Uid != 0:
			return p + " belongs to another user", nil
		case fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0:
			return p + " is writable by others", nil
		}
		if p == filepath.Dir(p) {
			return "", nil
		}
	}
}
