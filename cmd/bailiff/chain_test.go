package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"bailiff/chain"
	"bailiff/internal/chainfix"
	"bailiff/internal/golden"
)

const chainDir = "../../fixtures/chain"

// TestChainFixturesCurrent regenerates the audit-log fixtures from their
// sources and demands the committed ones be exactly those bytes: record
// is deterministic, and no fixture was edited by hand.
func TestChainFixturesCurrent(t *testing.T) {
	tmp := t.TempDir()
	if err := os.CopyFS(filepath.Join(tmp, "src"), os.DirFS(filepath.Join(chainDir, "src"))); err != nil {
		t.Fatal(err)
	}
	if err := chainfix.Generate(tmp); err != nil {
		t.Fatal(err)
	}
	want, err := chainfix.Files(chainDir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := chainfix.Files(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("generated files differ from the committed ones (run go run ./internal/chainfix/gen):\n got %v\nwant %v", got, want)
	}
	for _, f := range want {
		a, _ := os.ReadFile(filepath.Join(chainDir, f))
		b, _ := os.ReadFile(filepath.Join(tmp, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from what the generator makes (run go run ./internal/chainfix/gen)", f)
		}
	}
}

// TestChainFixtures verifies every fixture log: good_* exit 0, fail_*
// exit 1, and the output matches golden/verify/. Logs whose damage only a
// checkpoint reveals are also verified against the good log's checkpoint.
func TestChainFixtures(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join(chainDir, "*.jsonl"))
	if len(logs) < 15 {
		t.Fatalf("only %d fixture logs", len(logs))
	}
	ckpt := []string{"--checkpoint", filepath.Join(chainDir, "good_mail.ckpt"), "--key", filepath.Join(chainDir, "src/test.pub")}
	withCheckpoint := map[string]bool{"good_mail": true, "fail_truncated": true, "fail_forged_verdict": true, "fail_policy_rewritten": true}
	for _, log := range logs {
		name := strings.TrimSuffix(filepath.Base(log), ".jsonl")
		want := 1
		if strings.HasPrefix(name, "good_") {
			want = 0
		}
		t.Run(name, func(t *testing.T) {
			runs := map[string][]string{
				"table": {"verify", log},
				"json":  {"verify", "--format", "json", log},
			}
			if name == "good_purged" || name == "fail_forged_verdict" {
				runs["markdown"] = []string{"verify", "--format", "markdown", log}
			}
			if withCheckpoint[name] {
				runs["checkpoint.table"] = append(append([]string{"verify"}, ckpt...), log)
			}
			for suffix, args := range runs {
				var out, errb bytes.Buffer
				code := run(args, nil, &out, &errb)
				expect := want
				if name == "fail_truncated" && suffix != "checkpoint.table" {
					expect = 0 // a clean cut is invisible without a checkpoint
				}
				if code != expect {
					t.Errorf("%s: exit %d, want %d; stderr: %s", strings.Join(args, " "), code, expect, errb.String())
				}
				golden.Check(t, filepath.Join("../../golden/verify", name+"."+suffix), out.Bytes())
			}
		})
	}
}

// TestVerifyLiveLog: a log a writer holds open may end in a line still
// being written; verify says so instead of reporting tampering. The same
// bytes with no writer are a finding.
func TestVerifyLiveLog(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "live.jsonl")
	w, err := chain.Open(name, chain.Sync)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(time.Unix(0, 0), "s", chain.KindEnd, nil); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"v":1,"seq":1,"ts":"2026`)
	f.Close()
	var out, errb bytes.Buffer
	if code := run([]string{"verify", "--integrity-only", name}, nil, &out, &errb); code != 0 || !strings.Contains(errb.String(), "is being written") {
		t.Errorf("live log: exit %d, stderr %q", code, errb.String())
	}
	w.Close()
	out.Reset()
	errb.Reset()
	if code := run([]string{"verify", "--integrity-only", name}, nil, &out, &errb); code != 1 || !strings.Contains(out.String(), "torn last line") {
		t.Errorf("closed log with a torn tail: exit %d, stdout %q", code, out.String())
	}
}

// TestKeygenModes: the private half is 0600, the public half 0644, with
// -o and in the approver directory alike.
func TestKeygenModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes")
	}
	dir := t.TempDir()
	t.Setenv("BAILIFF_APPROVER_DIR", filepath.Join(dir, "approvers"))
	for _, args := range [][]string{
		{"keygen", "--name", "audit.example/test", "-o", filepath.Join(dir, "k")},
		{"keygen", "--approver", "lee"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, nil, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
	}
	for name, want := range map[string]os.FileMode{
		"k.key": 0o600, "k.pub": 0o644, "approvers/lee.key": 0o600, "approvers/lee.pub": 0o644,
	} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
}
