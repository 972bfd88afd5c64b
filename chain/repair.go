package chain

import (
	"errors"
	"io"
)

// Repair copies a log to w, cutting off a torn last line: what a writer
// killed mid-record leaves. Every whole record is kept. A log that fails
// integrity anywhere else is refused with its *VerifyError: repair does
// not hide tampering, and input that is no log is a *NotALogError. It
// returns the records kept and the bytes cut.
func Repair(r io.Reader, w io.Writer) (kept, cut int64, err error) {
	lr := newLineReader(r)
	rd := &Reader{}
	for {
		line, off, complete, err := lr.next()
		if err == io.EOF {
			// An empty log stays empty: it is what a writer killed before
			// its first record leaves, and verify says it is empty.
			return rd.next, 0, nil
		}
		if err != nil {
			return rd.next, 0, &VerifyError{Seq: rd.next, Offset: off, Reason: err.Error()}
		}
		if rd.next == 0 {
			// A file that is no log would otherwise be "repaired" into
			// an empty one.
			if err := sniff(line, lr.rest()); err != nil {
				return 0, 0, err
			}
		}
		if !complete {
			return rd.next, int64(len(line)), nil
		}
		if _, verr := rd.check(line, off, true); verr != nil {
			return rd.next, 0, verr
		}
		// line is followed by its newline in the reader's buffer, so this
		// append writes the byte that is already there.
		if _, err := w.Write(append(line, '\n')); err != nil {
			return rd.next, 0, errors.Join(errors.New("write"), err)
		}
	}
}
