package chain

import (
	"encoding/json"
	"errors"
	"io"
)

// Repaired says what Repair did.
type Repaired struct {
	Kept int64 // records copied
	Cut  int64 // bytes of a partial last record cut off
	// Newline is set when the last record was whole but lacked its
	// newline (a writer stopped between the two), which was added.
	Newline bool
}

// Repair copies a log to w, cutting off a torn last line: what a writer
// killed mid-record leaves. Every whole record is kept, including a last
// one that lacks only its newline. A log that fails integrity anywhere
// else is refused with its *VerifyError: repair does not hide tampering,
// so a last line that is whole JSON but not the record the chain expects
// is an edit, not a tear. Input that is no log is a *NotALogError.
func Repair(r io.Reader, w io.Writer) (Repaired, error) {
	lr := newLineReader(r)
	rd := &Reader{}
	var done Repaired
	for {
		line, off, complete, err := lr.next()
		if err == io.EOF {
			// An empty log stays empty: it is what a writer killed before
			// its first record leaves, and verify says it is empty.
			return done, nil
		}
		if err != nil {
			return done, &VerifyError{Seq: rd.next, Offset: off, Reason: err.Error()}
		}
		if rd.next == 0 {
			// A file that is no log would otherwise be "repaired" into
			// an empty one.
			if err := sniff(line, lr.rest()); err != nil {
				return Repaired{}, err
			}
		}
		if !complete && !json.Valid(line) {
			if reason := notATear(line, rd.next, rd.prev); reason != "" {
				return done, &VerifyError{Seq: rd.next, Offset: off, Reason: reason}
			}
			done.Cut = int64(len(line))
			return done, nil
		}
		if _, verr := rd.check(line, off, true); verr != nil {
			return done, verr
		}
		done.Newline = !complete
		// A whole line is followed by its newline in the reader's buffer,
		// so this append writes the byte that is already there.
		if _, err := w.Write(append(line, '\n')); err != nil {
			return done, errors.Join(errors.New("write"), err)
		}
		done.Kept = rd.next
	}
}
