package verify

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/semaphore"

	"bailiff/audit"
	"bailiff/chain"
)

// Log checks one log: its integrity (every record's hash, link and
// seq), against a checkpoint if one is given, and, unless IntegrityOnly,
// its semantics: every session is rebuilt from its own records (policy,
// pins, outputs from the evidence store, grants) and every recorded
// decision recomputed. Sessions are verified in parallel. Errors are for
// unusable input only (it cannot be read, is empty: chain.ErrEmptyLog, or is
// not a log: chain.ErrNotALog); everything wrong with the log is a
// Finding.
func Log(name string, r io.Reader, ev chain.EvidenceStore, opt Options) (*Report, error) {
	reps, err := Logs([]Input{{Name: name, R: r, Evidence: ev}}, opt)
	if err != nil {
		return nil, err
	}
	return reps[0], nil
}

// read checks the chain in file order and hands each session's records
// to its worker. It returns an error only for input that cannot be read;
// the first integrity failure is a finding and ends the reading.
func (v *verifier) read(rep *Report, rd *chain.Reader, send func(chain.Record), cp *chain.Checkpoint) error {
	var last time.Time // the time of the record before
	for {
		if cp != nil && rd.Count() == cp.Size {
			checkRoot(rep, cp, rd.Root())
		}
		rec, err := rd.Next()
		if err != nil {
			return v.readEnd(rep, err)
		}
		if rec.TS.Before(last) {
			rep.Warnings = append(rep.Warnings, Finding{File: v.file, Seq: rec.Seq, Session: rec.Session, Kind: WarnTime,
				Recorded: rec.TS.Format(chain.TimeFormat), Recomputed: "not before " + last.Format(chain.TimeFormat),
				Reason: fmt.Sprintf("time goes back: record %d is at %s, before record %d at %s", rec.Seq, rec.TS.Format(chain.TimeFormat), rec.Seq-1, last.Format(chain.TimeFormat))})
		}
		last = rec.TS
		switch rec.Kind {
		case chain.KindCheckpoint:
			v.checkpointRecord(rec, rd.RootBefore())
		case chain.KindMalformed:
			// A request that never became a call decides nothing, and may
			// come before its session's record.
			var b audit.MalformedBody
			if err := chain.DecodeBody(rec.Body, &b); err != nil {
				v.findings = append(v.findings, Finding{File: v.file, Seq: rec.Seq, Session: rec.Session, Kind: FindRecord, Reason: "malformed record: " + err.Error()})
			}
		default:
			send(rec)
		}
	}
}

// readEnd is how reading ends on err: cleanly at io.EOF, with a finding
// at the first integrity failure, or with the error for unreadable input.
// Apart from the loop, the heap target errors.As needs is made once, at
// the end, not for every record.
func (v *verifier) readEnd(rep *Report, err error) error {
	if err == io.EOF {
		return nil
	}
	var ve *chain.VerifyError
	if errors.As(err, &ve) {
		rep.Findings = append(rep.Findings, integrityFinding(v.file, ve))
		return nil
	}
	return err
}

func verifyIntegrity(rep *Report, r io.Reader, opt Options) error {
	var at []int64
	if opt.Checkpoint != nil {
		at = append(at, opt.Checkpoint.Size)
	}
	sum, err := chain.VerifyIntegrity(r, at...)
	rep.Records, rep.Root = sum.Records, sum.Root
	var ve *chain.VerifyError
	if errors.As(err, &ve) {
		rep.Findings = append(rep.Findings, integrityFinding(rep.File, ve))
		return nil
	}
	if err != nil {
		return inputError(rep.File, err)
	}
	if sum.Records == 0 {
		return inputError(rep.File, chain.ErrEmptyLog)
	}
	if c := opt.Checkpoint; c != nil {
		if root, ok := sum.RootAt[c.Size]; ok {
			checkRoot(rep, c, root)
		} else {
			rep.Findings = append(rep.Findings, Finding{File: rep.File, Seq: sum.Records, Kind: FindCheckpoint,
				Recorded: fmt.Sprintf("%d records", sum.Records), Recomputed: fmt.Sprintf("%d records", c.Size),
				Reason: fmt.Sprintf("the log was truncated: the checkpoint covers %d records and the log has %d", c.Size, sum.Records)})
		}
	}
	return nil
}

// inputError names the file an error is about. The two that say what the
// file is read as a sentence about it ("audit.jsonl is empty: ...").
func inputError(name string, err error) error {
	var not *chain.NotALogError
	switch {
	case errors.As(err, &not):
		return &fileError{name + " " + not.Looks, err}
	case errors.Is(err, chain.ErrEmptyLog):
		return &fileError{name + " is empty: there is nothing to verify", err}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// fileError is an input error phrased as a sentence about the file.
type fileError struct {
	text string
	err  error
}

func (e *fileError) Error() string { return e.text }
func (e *fileError) Unwrap() error { return e.err }

func checkRoot(rep *Report, c *chain.Checkpoint, root [32]byte) {
	if root == c.Root {
		return
	}
	rep.Findings = append(rep.Findings, Finding{File: rep.File, Seq: c.Size - 1, Kind: FindCheckpoint,
		Recorded: "root " + hex.EncodeToString(root[:6]), Recomputed: "root " + hex.EncodeToString(c.Root[:6]),
		Reason: fmt.Sprintf("the first %d records are not the ones the checkpoint signed: the log was rewritten or rolled back", c.Size)})
}

func integrityFinding(file string, ve *chain.VerifyError) Finding {
	return Finding{File: file, Seq: ve.Seq, Kind: FindIntegrity, Recorded: ve.Got, Recomputed: ve.Want,
		Reason: fmt.Sprintf("%s (offset %d)", ve.Reason, ve.Offset), Torn: ve.Torn}
}

func sortReport(rep *Report) {
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		a, b := rep.Findings[i], rep.Findings[j]
		if a.Seq != b.Seq {
			return a.Seq < b.Seq
		}
		return a.Kind < b.Kind
	})
	sort.SliceStable(rep.Unevaluable, func(i, j int) bool { return rep.Unevaluable[i].Seq < rep.Unevaluable[j].Seq })
}

// checkpointRecord checks a checkpoint written into the log against the
// records before it.
func (v *verifier) checkpointRecord(rec chain.Record, root [32]byte) {
	fail := func(reason string) {
		v.findings = append(v.findings, Finding{File: v.file, Seq: rec.Seq, Session: rec.Session, Kind: FindCheckpoint, Reason: reason})
	}
	var body chain.CheckpointBody
	if err := chain.DecodeBody(rec.Body, &body); err != nil {
		fail(fmt.Sprintf("checkpoint record: %v", err))
		return
	}
	var c chain.Checkpoint
	var err error
	if v.key != "" {
		c, err = chain.OpenCheckpoint([]byte(body.Note), v.key)
	} else {
		text, _, _ := strings.Cut(body.Note, "\n\n")
		c, err = chain.ParseCheckpoint([]byte(text + "\n"))
	}
	if err != nil {
		fail(err.Error())
		return
	}
	switch {
	case c.Size != rec.Seq:
		fail(fmt.Sprintf("checkpoint record %d signs %d records, not the %d before it", rec.Seq, c.Size, rec.Seq))
	case c.Root != root:
		fail(fmt.Sprintf("checkpoint record %d signs a root that is not the root of the records before it: they were rewritten", rec.Seq))
	}
}

// verifier holds what the sessions of one log share.
type verifier struct {
	file      string
	cache     *audit.Cache // policies by version, evidence text by digest
	noStore   bool         // the evidence store does not exist at all
	key       string
	approvers []string
	follow    FollowFunc
	findings  []Finding // from checkpoint records, read in order
}

// inFlight bounds the evidence being read and normalized at once, in
// bytes, across every log and session of the process: an output costs a
// few times its size while it is decoded, and workers times outputs must
// stay within the memory bound. One larger than the bound runs alone.
var inFlight = semaphore.NewWeighted(maxInFlight)

const maxInFlight = 8 << 20
