//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestForceKeepsSpecialFiles: --force replaces a file, never a device or
// a FIFO with one (as root, -o /dev/null --force once put a regular file
// where the device was). A FIFO stands in for the device here.
func TestForceKeepsSpecialFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pack.md")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"report", "--audit", fixtures + "/chain/good_mail.jsonl", "-o", fifo, "--force"}, nil, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "is not a regular file") {
		t.Errorf("exit %d: %s", code, errb.String())
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(fifo)); len(entries) != 1 {
		t.Errorf("a temporary file was left: %v", entries)
	}
}
