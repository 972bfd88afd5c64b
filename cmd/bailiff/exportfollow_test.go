package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"bailiff/chain"
)

const followPolicy = `version: 1
rules:
  - {id: read, tool: read_inbox, action: allow}
  - {id: no-delete, tool: delete_message, action: deny}
`

// recordSession writes the log of one session, id, recorded at clock.
func recordSession(t *testing.T, dir, id, clock string) string {
	t.Helper()
	trace := filepath.Join(dir, id+".trace.jsonl")
	os.WriteFile(trace, []byte(`{"start":{"session":"`+id+`","server":"mail","principal":{"subject":"ana"},"tools":["read_inbox","delete_message"]}}
{"call":{"id":"c1","tool":"read_inbox","args":{}}}
{"output":{"call":"c1","text":"mail for `+id+`"}}
{"call":{"id":"c2","tool":"delete_message","args":{"id":"m1"}}}
{"end":{}}
`), 0o600)
	policy := filepath.Join(dir, "policy.yaml")
	os.WriteFile(policy, []byte(followPolicy), 0o600)
	log := filepath.Join(dir, id+".jsonl")
	var stderr bytes.Buffer
	if code := run([]string{"record", "--clock", clock, "--policy", policy, trace, "-o", log}, nil, &bytes.Buffer{}, &stderr); code != 0 {
		t.Fatalf("record: %d %s", code, stderr.String())
	}
	return log
}

// records reads a log's records.
func records(t *testing.T, name string) []chain.Record {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []chain.Record
	r := chain.NewReader(f)
	for {
		rec, err := r.Next()
		if err != nil {
			return out
		}
		out = append(out, rec)
	}
}

// copyEvidence copies the evidence of log from into the store of log to.
func copyEvidence(t *testing.T, from, to string) {
	t.Helper()
	src, dst := chain.OpenEvidence(chain.EvidenceDir(from)), chain.OpenEvidence(chain.EvidenceDir(to))
	ds, err := src.Digests()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if err := src.CopyTo(dst, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// waitLines waits until file has n lines, and fails on more.
func waitLines(t *testing.T, file string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _ := os.ReadFile(file)
		got := strings.Count(string(data), "\n")
		if got == n {
			return strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
		}
		if got > n || time.Now().After(deadline) {
			t.Fatalf("%s has %d lines, want %d:\n%s", file, got, n, data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func verifiedOf(t *testing.T, line string) string {
	var e struct{ Verified string }
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatal(err)
	}
	return e.Verified
}

// startFollower starts `bailiff export --follow log -o out`; its stderr
// is kept, and it is killed when the test ends.
func startFollower(t *testing.T, log, out string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(os.Args[0], "export", "--follow", log, "-o", out)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, &stderr
}

// TestExportFollow: a follower exports a log, then each record a writer
// appends (never half of one), keeps reading the log after it is renamed
// away until its writer lets go, then verifies and follows the new log at
// the name; stopped by SIGTERM it exits 0, and its copy checks against
// both logs.
func TestExportFollow(t *testing.T) {
	dir := t.TempDir()
	a := recordSession(t, dir, "s1", "2026-01-01T09:00:00Z")
	b := recordSession(t, dir, "s2", "2026-01-01T10:00:00Z")
	c := recordSession(t, dir, "s3", "2026-01-01T11:00:00Z")
	ra, rb, rc := records(t, a), records(t, b), records(t, c)
	live := filepath.Join(dir, "audit.jsonl")
	data, _ := os.ReadFile(a)
	os.WriteFile(live, data, 0o600)
	copyEvidence(t, a, live)
	copyEvidence(t, b, live)

	out := filepath.Join(dir, "out.jsonl")
	cmd, stderr := startFollower(t, live, out)
	lines := waitLines(t, out, len(ra))
	if v := verifiedOf(t, lines[0]); v != "full" {
		t.Fatalf("the verified part says %q", v)
	}

	// A writer appends b's records: half before the log is rotated, half
	// after, to the renamed file it still holds.
	w, err := chain.Open(live, chain.Sync)
	if err != nil {
		t.Fatal(err)
	}
	half := len(rb) / 2
	for _, rec := range rb[:half] {
		if _, err := w.Append(rec.TS, rec.Session, rec.Kind, json.RawMessage(rec.Body)); err != nil {
			t.Fatal(err)
		}
	}
	lines = waitLines(t, out, len(ra)+half)
	if v := verifiedOf(t, lines[len(lines)-1]); v != "chain" {
		t.Fatalf("an appended record says %q, want chain", v)
	}
	rotated := live + ".1"
	if err := os.Rename(live, rotated); err != nil {
		t.Fatal(err)
	}
	os.Rename(chain.EvidenceDir(live), chain.EvidenceDir(rotated))
	time.Sleep(3 * followPoll) // the follower sees the rename, and the writer's hold
	for _, rec := range rb[half:] {
		if _, err := w.Append(rec.TS, rec.Session, rec.Kind, json.RawMessage(rec.Body)); err != nil {
			t.Fatal(err)
		}
	}
	waitLines(t, out, len(ra)+len(rb))
	w.Close()

	// The new log at the name arrives a line at a time, the first one torn
	// for a while: nothing of it is exported until it is whole.
	newLog, _ := os.ReadFile(c)
	first := bytes.IndexByte(newLog, '\n') + 1
	os.WriteFile(live, newLog[:first/2], 0o600)
	copyEvidence(t, c, live)
	time.Sleep(4 * followPoll)
	waitLines(t, out, len(ra)+len(rb))
	f, _ := os.OpenFile(live, os.O_WRONLY|os.O_APPEND, 0)
	f.Write(newLog[first/2:])
	f.Close()
	waitLines(t, out, len(ra)+len(rb)+len(rc))

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the follower stopped by SIGTERM: %v\n%s", err, stderr.String())
	}
	var vout, verr bytes.Buffer
	if code := run([]string{"verify", "--export", out, rotated, live}, nil, &vout, &verr); code != 0 || !strings.Contains(vout.String(), " matches ") {
		t.Fatalf("verify --export of the follower's copy: exit %d\n%s%s", code, vout.String(), verr.String())
	}
}

// TestExportFollowStopsOnABrokenLink: a record appended that is not the
// next link of the chain stops the follower with a finding, after every
// record before it was written.
func TestExportFollowStopsOnABrokenLink(t *testing.T) {
	dir := t.TempDir()
	a := recordSession(t, dir, "s1", "2026-01-01T09:00:00Z")
	b := recordSession(t, dir, "s2", "2026-01-01T10:00:00Z")
	out := filepath.Join(dir, "out.jsonl")
	cmd, stderr := startFollower(t, a, out)
	n := len(records(t, a))
	waitLines(t, out, n)
	// b's second record, spliced on: its seq and link are b's.
	other, _ := os.ReadFile(b)
	second := strings.SplitAfter(string(other), "\n")[1]
	f, _ := os.OpenFile(a, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(second)
	f.Close()
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFinding || !strings.Contains(stderr.String(), "fails integrity") {
		t.Fatalf("a spliced record: %v\n%s", err, stderr.String())
	}
	waitLines(t, out, n)
}

// TestExportFollowTruncated: a log cut to nothing and written again in
// place (copytruncate) is followed as the new log it now is, from its
// first record, and the cut is said on stderr.
func TestExportFollowTruncated(t *testing.T) {
	dir := t.TempDir()
	a := recordSession(t, dir, "s1", "2026-01-01T09:00:00Z")
	b := recordSession(t, dir, "s2", "2026-01-01T10:00:00Z")
	live := filepath.Join(dir, "audit.jsonl")
	first, _ := os.ReadFile(a)
	os.WriteFile(live, first, 0o600)
	copyEvidence(t, a, live)
	copyEvidence(t, b, live)
	out := filepath.Join(dir, "out.jsonl")
	cmd, stderr := startFollower(t, live, out)
	na, nb := len(records(t, a)), len(records(t, b))
	waitLines(t, out, na)
	second, _ := os.ReadFile(b)
	f, _ := os.OpenFile(live, os.O_WRONLY|os.O_TRUNC, 0)
	f.Write(second)
	f.Close()
	lines := waitLines(t, out, na+nb)
	if v := verifiedOf(t, lines[na]); v != "full" {
		t.Errorf("the new log's first record says %q: it is verified before it is followed", v)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil || !strings.Contains(stderr.String(), "following it as a new log") {
		t.Fatalf("a follower of a truncated log: %v\n%s", err, stderr.String())
	}
	var vout, verr bytes.Buffer
	if code := run([]string{"verify", "--export", out, a, live}, nil, &vout, &verr); code != 0 {
		t.Fatalf("verify --export: exit %d\n%s%s", code, vout.String(), verr.String())
	}
}

// TestStagedStreamGetsNothingOnError: export's events reach a stream only
// once the log read is known to be the log verified; an error at the end
// leaves the stream untouched.
func TestStagedStreamGetsNothingOnError(t *testing.T) {
	var out bytes.Buffer
	err := staged(&out, true, func(w io.Writer) error {
		w.Write([]byte("an event of a log rewritten after it was verified\n"))
		return errors.New("changed since it was verified")
	})
	if err == nil || out.Len() != 0 {
		t.Fatalf("a failed export: error %v, %d bytes on the stream", err, out.Len())
	}
	if err := staged(&out, true, func(w io.Writer) error { _, err := w.Write([]byte("ok\n")); return err }); err != nil || out.String() != "ok\n" {
		t.Fatalf("a good export: %v %q", err, out.String())
	}
}
