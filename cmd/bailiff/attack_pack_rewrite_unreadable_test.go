package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/verify"
)

// forgeThenBreakOnSecondPass rewrites the log, the moment verify has read
// its last byte, into a re-chained copy of its first session with one
// verdict forged (delete_message, denied by block-delete, recorded as
// allowed), followed by a line that is not a record.
type forgeThenBreakOnSecondPass struct {
	t    *testing.T
	file string
	size int64
	seen int64
	done bool
}

func (a *forgeThenBreakOnSecondPass) Write(p []byte) (int, error) {
	a.seen += int64(len(p))
	if a.done || a.seen < a.size {
		return len(p), nil
	}
	a.done = true
	tmp := filepath.Join(a.t.TempDir(), "forged.jsonl")
	w, err := chain.Open(tmp, chain.None)
	if err != nil {
		a.t.Fatal(err)
	}
	rd := chain.NewReader(bytes.NewReader(mustRead(a.t, a.file)))
	for {
		rec, err := rd.Next()
		if err != nil {
			a.t.Fatal(err)
		}
		var body any = rec.Body
		if rec.Kind == chain.KindCall {
			var b audit.CallBody
			if err := chain.DecodeBody(rec.Body, &b); err != nil {
				a.t.Fatal(err)
			}
			if b.Tool == "delete_message" {
				b.Decision = audit.FromDecision(engine.Decision{Verdict: engine.Allow, Check: engine.CheckRules, Rule: "read-mail", Reason: "rule read-mail"})
				body = &b
			}
		}
		if _, err := w.Append(rec.TS, rec.Session, rec.Kind, body); err != nil {
			a.t.Fatal(err)
		}
		if rec.Kind == chain.KindEnd {
			break // the first session, and nothing after it
		}
	}
	if err := w.Close(); err != nil {
		a.t.Fatal(err)
	}
	forged := append(mustRead(a.t, tmp), []byte("this line is not a record\n")...)
	if int64(len(forged)) >= a.size {
		a.t.Fatalf("setup: the forgery is %d bytes, not within the %d verify read", len(forged), a.size)
	}
	if err := os.WriteFile(a.file, forged, 0o600); err != nil {
		a.t.Fatal(err)
	}
	return len(p), nil
}

// TestAttackPackRewriteEndingUnreadableIsCounted: packLog refuses a log
// whose second read ends with another record count or root than verify's,
// but only when the second read ends cleanly (read.Err == nil). A log
// rewritten between the reads into a re-chained forgery that ends in a
// line that is not a record makes the second read fail, so the root is
// never compared: the sessions the summary finished before the failure
// (here a forged allow of delete_message, which verify saw denied by
// block-delete) stay counted in the pack, which only adds an
// "unreadable" finding to a log verify found clean.
func TestAttackPackRewriteEndingUnreadableIsCounted(t *testing.T) {
	file, size := goodMailCopy(t)
	sum := audit.NewSummary(time.Time{}, time.Time{})
	l, err := packLog(sum, "good_mail", file, verify.Options{Workers: 1}, &forgeThenBreakOnSecondPass{t: t, file: file, size: size})
	if err != nil && strings.Contains(err.Error(), "changed while it was read") {
		return // refused, as it should be
	}
	if l.Report == nil || len(l.Report.Findings) != 0 {
		t.Fatalf("setup: the log as verified has findings or no report: %v", err)
	}
	var readErr error
	if l.Read != nil {
		readErr = l.Read.Err
	}
	if sum.ByTool["delete_message"]["allow"] > 0 {
		t.Fatalf("packLog of a log rewritten between its reads (err %v, read error %v): the pack counts %d allowed delete_message call(s) and %d calls; verify saw %d calls, delete_message only denied",
			err, readErr, sum.ByTool["delete_message"]["allow"], sum.Calls, l.Report.Calls)
	}
}
