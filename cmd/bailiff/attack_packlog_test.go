package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
	"bailiff/verify"
)

// appendOnSecondPass appends chain-consistent records to the log the
// moment the review pack starts reading it a second time (to summarize
// it), after verify has read it to the end: what a gateway still writing
// the log, or anyone who can append to it, does between the two reads.
type appendOnSecondPass struct {
	t    *testing.T
	file string
	size int64
	seen int64
	done bool
}

func (a *appendOnSecondPass) Write(p []byte) (int, error) {
	a.seen += int64(len(p))
	if !a.done && a.seen > a.size {
		a.done = true
		w, err := chain.Open(a.file, chain.None)
		if err != nil {
			a.t.Fatal(err)
		}
		first, _ := bufio.NewReader(bytes.NewReader(mustRead(a.t, a.file))).ReadBytes('\n')
		rec, err := chain.Parse(bytes.TrimSuffix(first, []byte("\n")))
		if err != nil {
			a.t.Fatal(err)
		}
		var sb audit.SessionBody
		if err := chain.DecodeBody(rec.Body, &sb); err != nil {
			a.t.Fatal(err)
		}
		at := time.Date(2026, 11, 3, 11, 0, 0, 0, time.UTC)
		if _, err := w.Append(at, "s9", chain.KindSession, &sb); err != nil {
			a.t.Fatal(err)
		}
		args := map[string]any{"id": 1}
		d := audit.FromDecision(engine.Decision{Verdict: engine.Allow, Check: engine.CheckRules, Rule: "read-mail"})
		if _, err := w.Append(at.Add(time.Second), "s9", chain.KindCall, &audit.CallBody{Call: "x1", Tool: "delete_message",
			Args: args, Digest: engine.ArgsDigest(args), Decision: d}); err != nil {
			a.t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			a.t.Fatal(err)
		}
	}
	return len(p), nil
}

func mustRead(t *testing.T, f string) []byte {
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAttackPackSummarizesUnverifiedRecords: packLog verifies a log in
// one read and summarizes it in a second read of the same open file, to
// its end. Records written between the two reads are counted in the pack
// (here a forged "allow" of delete_message, which the policy denies) but
// were never verified: the pack's call counts exceed what verify saw.
func TestAttackPackSummarizesUnverifiedRecords(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "good_mail.jsonl")
	if out, err := exec.Command("cp", "-r", "../../fixtures/chain/good_mail.jsonl", "../../fixtures/chain/good_mail.jsonl.evidence", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	sum := replay.NewSummary(time.Time{}, time.Time{})
	l, err := packLog(sum, "good_mail", file, nil, &appendOnSecondPass{t: t, file: file, size: st.Size()})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Report.Findings) != 0 {
		t.Fatalf("setup: the log as verified has findings: %+v", l.Report.Findings)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	after, err := verify.Log("good_mail", f, chain.Evidence{Dir: chain.EvidenceDir(file)}, verify.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the same file verified now: %d findings", len(after.Findings))
	if sum.Calls != l.Report.Calls || sum.ByTool["delete_message"]["allow"] != 0 {
		t.Fatalf("the pack counts %d calls (delete_message allowed %d times) of a log verify saw %d calls in, with no findings",
			sum.Calls, sum.ByTool["delete_message"]["allow"], l.Report.Calls)
	}
}
