package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProgressNeverOffTerminal: a buffer, a pipe or a file as stderr sees
// no progress, however large the input, from the helper and from shadow
// and ablate.
func TestProgressNeverOffTerminal(t *testing.T) {
	defer func(n int64) { progressMin = n }(progressMin)
	progressMin = 0
	var buf bytes.Buffer
	p := newProgress(&buf, 1<<40, "verify")
	p.Write(make([]byte, 1<<20))
	p.Done()
	if buf.Len() != 0 {
		t.Errorf("progress on a buffer: %q", buf.String())
	}
	const fx = "../../fixtures"
	for _, args := range [][]string{
		{"shadow", "--candidate", fx + "/chain/src/candidate.yaml", fx + "/chain/good_mail.jsonl"},
		{"ablate", fx + "/chain/good_mail.jsonl"},
		{"verify", fx + "/chain/good_mail.jsonl"},
		{"report", "--audit", fx + "/chain/good_mail.jsonl", "-o", filepath.Join(t.TempDir(), "pack.md")},
		{"record", "--policy", fx + "/chain/src/policy.yaml", "--clock", "2026-12-01T09:00:00Z", fx + "/traces/main/deny_taint_exact_email.jsonl", "-o", filepath.Join(t.TempDir(), "a.jsonl")},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		code := run(args, nil, &out, w)
		w.Close()
		got, _ := io.ReadAll(r)
		r.Close()
		if code != 0 || bytes.Contains(got, []byte("%")) || bytes.Contains(got, []byte("\r")) {
			t.Errorf("%s: exit %d, progress on a pipe %q", args[0], code, got)
		}
	}
}

// TestProgressOnTerminal: with stderr a terminal, each long command draws a
// bar there, and stdout holds only the result.
func TestProgressOnTerminal(t *testing.T) {
	defer func(n int64) { progressMin = n }(progressMin)
	progressMin = 0
	const fx = "../../fixtures"
	for _, args := range [][]string{
		{"shadow", "--candidate", fx + "/chain/src/candidate.yaml", fx + "/chain/good_mail.jsonl"},
		{"ablate", fx + "/chain/good_mail.jsonl"},
		{"verify", fx + "/chain/good_mail.jsonl"},
		{"report", "--audit", fx + "/chain/good_mail.jsonl", "-o", filepath.Join(t.TempDir(), "pack.md")},
		{"record", "--policy", fx + "/chain/src/policy.yaml", "--clock", "2026-12-01T09:00:00Z", fx + "/traces/main/deny_taint_exact_email.jsonl", "-o", filepath.Join(t.TempDir(), "a.jsonl")},
	} {
		tty, read := openTerminal(t)
		var out bytes.Buffer
		code := run(args, nil, &out, tty)
		tty.Close()
		got := read()
		if code != 0 || !strings.Contains(got, args[0]) || !strings.Contains(got, "%") {
			t.Errorf("%s: exit %d, no bar on the terminal: %q", args[0], code, got)

		}
		if strings.Contains(out.String(), "%") {
			t.Errorf("%s: progress on stdout: %q", args[0], out.String())
		}
	}
}

// TestProgressCountsBytes: the bar is over bytes read, as the reader
// reports them.
func TestProgressCountsBytes(t *testing.T) {
	defer func(n int64) { progressMin = n }(progressMin)
	progressMin = 0
	tty, read := openTerminal(t)
	p := newProgress(tty, 1000, "verify")
	p.Write(make([]byte, 500))
	time.Sleep(300 * time.Millisecond) // past the throttle
	p.Write(make([]byte, 100))
	p.Done()
	p.Done()
	tty.Close()
	if got := read(); !strings.Contains(got, "verify  60%") {
		t.Errorf("no bar at 60%%: %q", got)
	}
}
