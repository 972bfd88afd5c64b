package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
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
// one read and summarizes it in a second read of the same open file.
// Records appended between the two reads (here a forged "allow" of
// delete_message, which the policy denies) were never verified: the
// summary reads only the bytes verify read.
func TestAttackPackSummarizesUnverifiedRecords(t *testing.T) {
	file, size := goodMailCopy(t)
	sum := audit.NewSummary(time.Time{}, time.Time{})
	l, err := packLog(sum, "good_mail", file, verify.Options{Workers: 1}, &appendOnSecondPass{t: t, file: file, size: size})
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
	after, err := verify.Log("good_mail", f, chain.OpenEvidence(chain.EvidenceDir(file)), verify.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the same file verified now: %d findings", len(after.Findings))
	if sum.Calls != l.Report.Calls || sum.ByTool["delete_message"]["allow"] != 0 {
		t.Fatalf("the pack counts %d calls (delete_message allowed %d times) of a log verify saw %d calls in, with no findings",
			sum.Calls, sum.ByTool["delete_message"]["allow"], l.Report.Calls)
	}
}

// rewriteOnSecondPass rewrites the log in place, as one consistent chain
// of the same length with its last record a second later, the moment
// verify has read the last byte: an editor who re-chains what they edit.
type rewriteOnSecondPass struct {
	t    *testing.T
	file string
	size int64
	seen int64
	done bool
}

func (a *rewriteOnSecondPass) Write(p []byte) (int, error) {
	a.seen += int64(len(p))
	if a.done || a.seen < a.size {
		return len(p), nil
	}
	a.done = true
	var recs []chain.Record
	rd := chain.NewReader(bytes.NewReader(mustRead(a.t, a.file)))
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		recs = append(recs, rec)
	}
	tmp := filepath.Join(a.t.TempDir(), "rewritten.jsonl")
	w, err := chain.Open(tmp, chain.None)
	if err != nil {
		a.t.Fatal(err)
	}
	for i, rec := range recs {
		if i == len(recs)-1 {
			rec.TS = rec.TS.Add(time.Second)
		}
		if _, err := w.Append(rec.TS, rec.Session, rec.Kind, rec.Body); err != nil {
			a.t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		a.t.Fatal(err)
	}
	b := mustRead(a.t, tmp)
	if int64(len(b)) != a.size || bytes.Equal(b, mustRead(a.t, a.file)) {
		a.t.Fatalf("setup: the rewrite is %d bytes (want %d) or unchanged", len(b), a.size)
	}
	if err := os.WriteFile(a.file, b, 0o600); err != nil {
		a.t.Fatal(err)
	}
	return len(p), nil
}

// TestPackRefusesALogRewrittenBetweenReads: a log rewritten between
// verify's read and the summary's, into a chain that is itself
// consistent, is not summarized as the log that was verified.
func TestPackRefusesALogRewrittenBetweenReads(t *testing.T) {
	file, size := goodMailCopy(t)
	sum := audit.NewSummary(time.Time{}, time.Time{})
	_, err := packLog(sum, "good_mail", file, verify.Options{Workers: 1}, &rewriteOnSecondPass{t: t, file: file, size: size})
	if err == nil || !strings.Contains(err.Error(), "changed while it was read") {
		t.Fatalf("packLog of a log rewritten between its reads: %v, want a refusal", err)
	}
}

// goodMailCopy copies a verified fixture log and its evidence to a
// temporary directory, and returns the copy's name and size.
func goodMailCopy(t *testing.T) (string, int64) {
	dir := t.TempDir()
	file := filepath.Join(dir, "good_mail.jsonl")
	if out, err := exec.Command("cp", "-r", "../../fixtures/chain/good_mail.jsonl", "../../fixtures/chain/good_mail.jsonl.evidence", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	return file, st.Size()
}
