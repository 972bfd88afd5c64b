package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCopiesRefusedHoweverGiven: a copy of a log beside it is refused by
// the commands that count sessions, also when its first record is longer
// than any buffer (a session record holds the whole policy) and when the
// copy comes on standard input.
func TestCopiesRefusedHoweverGiven(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	trace := filepath.Join(dir, "trace.jsonl")
	long := strings.Repeat("a reason long enough to push the session record past every buffer ", 1200)
	os.WriteFile(pol, []byte("version: 1\nrules:\n  - {id: read, tool: read, action: allow, reason: \""+long+"\"}\n"), 0o644)
	os.WriteFile(trace, []byte(`{"start":{"session":"s1","server":"mail","principal":{"subject":"ana"},"tools":["read"]}}`+"\n"+
		`{"call":{"id":"c1","tool":"read","args":{}}}`+"\n"+`{"end":{}}`+"\n"), 0o644)
	log, copied := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	var out, errb bytes.Buffer
	if code := run([]string{"record", "--clock", "2026-01-01T00:00:00Z", "--policy", pol, trace, "-o", log}, nil, &out, &errb); code != 0 {
		t.Fatalf("record: %s", errb.String())
	}
	data, _ := os.ReadFile(log)
	if i := bytes.IndexByte(data, '\n'); i < 70<<10 {
		t.Fatalf("the first record is %d bytes: the test needs one past 64 KiB", i)
	}
	os.WriteFile(copied, data, 0o644)
	for _, c := range []struct {
		args  []string
		stdin bool
	}{
		{[]string{"shadow", "--candidate", pol, log, copied}, false},
		{[]string{"ablate", log, copied}, false},
		{[]string{"report", "--audit", log, "--audit", copied, "-o", "-"}, false},
		{[]string{"shadow", "--candidate", pol, log, "-"}, true},
		{[]string{"ablate", log, "-"}, true},
		{[]string{"report", "--audit", log, "--audit", "-", "-o", "-"}, true},
	} {
		var stdin io.Reader
		if c.stdin {
			f, _ := os.Open(log)
			defer f.Close()
			stdin = f
		}
		out.Reset()
		errb.Reset()
		if code := run(c.args, stdin, &out, &errb); code != 2 || !strings.Contains(errb.String(), "begin with the same record") || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q; want exit 2 refusing a copy", c.args, code, out.Len(), errb.String())
		}
	}
}
