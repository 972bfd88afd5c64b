package export

import (
	"bufio"
	"fmt"
	"io"

	"bailiff/chain"
)

// Write writes the events of the logs' records, log by log in order, in
// format f, and returns where each log's export ended. A log is read to
// exactly where it was verified: records appended since are left for the
// next export (or a Tail). A log whose first records are not the ones
// verified (rewritten in between) is an error after its events were
// written: the caller discards what it wrote.
func Write(w io.Writer, f Format, logs []Log) ([]*Tail, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	var buf []byte
	ends := make([]*Tail, len(logs))
	for i, l := range logs {
		r := chain.NewReader(l.R)
		t := &Tail{Format: f, Seq: -1}
		for n := int64(0); n < l.Records; n++ {
			rec, err := r.Next()
			if err != nil {
				return nil, fmt.Errorf("%s changed since it was verified: %v", l.Name, err)
			}
			if n == 0 {
				t.Log = rec.Hash
			}
			line := rec.Line()
			t.advance(rec, len(line))
			buf = Append(buf[:0], f, FromRecord(t.Log, rec, l.Level))
			if _, err := bw.Write(buf); err != nil {
				return nil, err
			}
		}
		if r.Root() != l.Root {
			return nil, fmt.Errorf("%s changed since it was verified: its first %d records are not the ones verified", l.Name, l.Records)
		}
		ends[i] = t
	}
	return ends, bw.Flush()
}

// Tail continues a log's export past where it was verified, one line at
// a time, as a follower reads what a gateway appends: each line must be
// the next record of the chain (the next seq, linked to the last hash,
// its hash that of its bytes). Its events claim Chain: verdicts are not
// recomputed as records arrive.
type Tail struct {
	Format Format
	// Level is what the tail's events claim: Chain, or None after a
	// prefix with findings (set by the caller; "" is Chain).
	Level Level
	// Log is the log's id, the hash of its first record.
	Log chain.Hash
	// Seq and Hash are the last record's (Seq -1 before the first).
	Seq  int64
	Hash chain.Hash
	// Offset is where the next line starts in the log file.
	Offset int64
}

func (t *Tail) advance(rec chain.Record, n int) {
	t.Seq, t.Hash = rec.Seq, rec.Hash
	t.Offset += int64(n) + 1
}

// Next appends to b the event of line, the log's next record (without
// its newline); an error, and no event, when it is not.
func (t *Tail) Next(b, line []byte) ([]byte, error) {
	rec, err := chain.Parse(line)
	switch {
	case err != nil:
		return b, fmt.Errorf("record %d: %v", t.Seq+1, err)
	case rec.Seq != t.Seq+1:
		return b, fmt.Errorf("record %d has seq %d", t.Seq+1, rec.Seq)
	case rec.Prev != t.Hash:
		return b, fmt.Errorf("record %d does not link to the record before it", rec.Seq)
	}
	if rec.Seq == 0 {
		t.Log = rec.Hash
	}
	t.advance(rec, len(line))
	level := Chain
	if t.Level == None {
		level = None
	}
	return Append(b, t.Format, FromRecord(t.Log, rec, level)), nil
}
