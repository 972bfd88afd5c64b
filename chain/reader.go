package chain

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"golang.org/x/mod/sumdb/tlog"
)

// maxLine is the longest record line read. Tool output is kept as
// evidence, not in the log, so only huge arguments come near it.
const maxLine = 64 << 20

// VerifyError is the first record of a log that fails integrity: where it
// is and why, with the expected and actual values when there are two.
type VerifyError struct {
	Seq    int64 // the record's position (the seq it should have)
	Offset int64 // byte offset of its line in the file
	Reason string
	Want   string
	Got    string
	// Torn is set when the failing record is a last line with no newline:
	// the writer stopped mid-record, and Repair can cut it off.
	Torn bool
}

func (e *VerifyError) Error() string {
	s := fmt.Sprintf("record %d (offset %d): %s", e.Seq, e.Offset, e.Reason)
	if e.Want != "" || e.Got != "" {
		s += fmt.Sprintf(" (want %s, got %s)", e.Want, e.Got)
	}
	return s
}

// lineReader cuts a stream into lines without copying them; a line is
// valid until the next call.
type lineReader struct {
	r      io.Reader
	buf    []byte
	start  int
	end    int
	eof    bool
	offset int64 // file offset of buf[start]
}

// newLineReader starts with a buffer of 64 KB, which grows to the
// longest line: a verify of a hundred logs at once holds a hundred, so a
// megabyte each was a hundred megabytes before a record was read.
func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: r, buf: make([]byte, 64<<10)}
}

// next returns the next line without its newline, and whether it had one.
func (lr *lineReader) next() (line []byte, off int64, complete bool, err error) {
	for {
		if i := bytes.IndexByte(lr.buf[lr.start:lr.end], '\n'); i >= 0 {
			line = lr.buf[lr.start : lr.start+i]
			off = lr.offset
			lr.start += i + 1
			lr.offset += int64(i + 1)
			return line, off, true, nil
		}
		if lr.eof {
			if lr.start == lr.end {
				return nil, lr.offset, false, io.EOF
			}
			line = lr.buf[lr.start:lr.end]
			off = lr.offset
			lr.offset += int64(len(line))
			lr.start = lr.end
			return line, off, false, nil
		}
		if lr.end-lr.start >= maxLine {
			return nil, lr.offset, false, fmt.Errorf("line longer than %d bytes", maxLine)
		}
		// Move the partial line to the front, grow if full, and read more.
		n := copy(lr.buf, lr.buf[lr.start:lr.end])
		lr.start, lr.end = 0, n
		if lr.end == len(lr.buf) {
			lr.buf = append(lr.buf, make([]byte, len(lr.buf))...)
		}
		m, err := lr.r.Read(lr.buf[lr.end:])
		lr.end += m
		if err == io.EOF {
			lr.eof = true
		} else if err != nil {
			return nil, lr.offset, false, err
		}
	}
}

// rest is what the reader holds after the line last returned.
func (lr *lineReader) rest() []byte { return lr.buf[lr.start:lr.end] }

// Reader reads a log record by record, checking integrity as it goes:
// every record must parse, have the hash of its bytes, link to the one
// before it and carry the next seq. The first failure is a *VerifyError
// and ends the reading; a clean end is io.EOF. Input whose first line
// is no record at all is a *NotALogError (errors.Is ErrNotALog).
type Reader struct {
	lr   *lineReader
	next int64
	prev tlog.Hash
	tree Frontier
	// before is the root of the records before the last one read, kept
	// for checkpoint records, which sign the log up to themselves.
	before tlog.Hash
	err    error
	intern interner
}

// NewReader reads a log from its first record.
func NewReader(r io.Reader) *Reader { return &Reader{lr: newLineReader(r)} }

// Next returns the next record.
func (r *Reader) Next() (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	line, off, complete, err := r.lr.next()
	if err != nil {
		if err != io.EOF {
			err = &VerifyError{Seq: r.next, Offset: off, Reason: err.Error()}
		}
		r.err = err
		return Record{}, err
	}
	if r.next == 0 {
		if err := sniff(line, r.lr.rest()); err != nil {
			r.err = err
			return Record{}, err
		}
	}
	rec, verr := r.check(line, off, complete)
	if verr != nil {
		r.err = verr
		return Record{}, verr
	}
	return rec, nil
}

func (r *Reader) check(line []byte, off int64, complete bool) (Record, *VerifyError) {
	fail := func(reason, want, got string) *VerifyError {
		return &VerifyError{Seq: r.next, Offset: off, Reason: reason, Want: want, Got: got, Torn: !complete}
	}
	if !complete {
		if reason := notATear(line, r.next, r.prev); reason != "" {
			return Record{}, &VerifyError{Seq: r.next, Offset: off, Reason: reason}
		}
		return Record{}, fail(tornReason(line), "", "")
	}
	h, vErr := linkCheck(line, r.next, r.prev, fail)
	if vErr != nil {
		return Record{}, vErr
	}
	rec, err := parseFrame(line, r.next, r.prev, h, &r.intern)
	if err != nil {
		return Record{}, fail(err.Error(), "", "")
	}
	r.next++
	r.prev = rec.Hash
	if rec.Kind == KindCheckpoint {
		r.before = r.tree.Root()
	}
	r.tree.Add(rec.Leaf())
	return rec, nil
}

// linkCheck is the integrity check of one line: seq, hash and link.
func linkCheck(line []byte, want int64, prev tlog.Hash, fail func(reason, want, got string) *VerifyError) (tlog.Hash, *VerifyError) {
	seq, p, stated, actual, err := readHeader(line)
	if err != nil {
		return actual, fail(err.Error(), "", "")
	}
	switch {
	case seq != want:
		reason := "seq goes back: a record was repeated or moved"
		if seq > want {
			reason = "seq skips ahead: a record is missing or was moved"
		}
		return actual, fail(reason, fmt.Sprint(want), fmt.Sprint(seq))
	case stated != actual:
		return actual, fail("hash does not match the record's bytes: the record was edited", short(actual), short(stated))
	case p != prev:
		return actual, fail("prev does not match the previous record's hash: the chain is broken here", short(prev), short(p))
	}
	return actual, nil
}

// Count is how many records have been read and checked.
func (r *Reader) Count() int64 { return r.next }

// Root is the Merkle root of the records read so far.
func (r *Reader) Root() tlog.Hash { return r.tree.Root() }

// RootBefore is the Merkle root of the records before the last one read,
// when that one is a checkpoint record (the zero hash otherwise).
func (r *Reader) RootBefore() tlog.Hash { return r.before }

// Summary is what an integrity check learned of a log.
type Summary struct {
	Records int64
	Last    tlog.Hash // hash of the last record
	Root    tlog.Hash // Merkle root of all records
	// RootAt is the Merkle root after the number of records asked for
	// (absent when the log is shorter).
	RootAt map[int64]tlog.Hash
}

// VerifyIntegrity checks the hash chain of a whole log without decoding
// record bodies: canonical line shape, contiguous seq, each record's hash
// over its bytes, and each link. It computes the Merkle root as it goes,
// also at each size in rootsAt. The first failure is a *VerifyError; the
// Summary then describes the records before it. Input that is no log is
// a *NotALogError; an empty log is not an error here (Records is 0).
func VerifyIntegrity(r io.Reader, rootsAt ...int64) (Summary, error) {
	lr := newLineReader(r)
	var (
		s    = Summary{RootAt: map[int64]tlog.Hash{}}
		tree Frontier
		prev tlog.Hash
	)
	want := map[int64]bool{}
	for _, n := range rootsAt {
		want[n] = true
	}
	if want[0] {
		s.RootAt[0] = tree.Root()
	}
	for {
		line, off, complete, err := lr.next()
		if err == io.EOF {
			break
		}
		fail := func(reason, w, g string) *VerifyError {
			return &VerifyError{Seq: s.Records, Offset: off, Reason: reason, Want: w, Got: g, Torn: !complete}
		}
		if err != nil {
			s.Root = tree.Root()
			return s, fail(err.Error(), "", "")
		}
		if s.Records == 0 {
			if err := sniff(line, lr.rest()); err != nil {
				s.Root = tree.Root()
				return s, err
			}
		}
		if !complete {
			s.Root = tree.Root()
			if reason := notATear(line, s.Records, prev); reason != "" {
				return s, &VerifyError{Seq: s.Records, Offset: off, Reason: reason}
			}
			return s, fail(tornReason(line), "", "")
		}
		h, vErr := linkCheck(line, s.Records, prev, fail)
		if vErr != nil {
			s.Root = tree.Root()
			return s, vErr
		}
		prev = h
		tree.Add(tlog.RecordHash(prev[:]))
		s.Records++
		if want[s.Records] {
			s.RootAt[s.Records] = tree.Root()
		}
	}
	s.Last, s.Root = prev, tree.Root()
	return s, nil
}

// Frontier computes the RFC 6962 Merkle root of a growing list of leaves
// in O(log n) memory: it keeps the roots of the perfect subtrees that
// make up the tree so far.
type Frontier struct {
	n     int64
	stack []tlog.Hash
}

// Add appends a leaf hash.
func (f *Frontier) Add(leaf tlog.Hash) {
	f.stack = append(f.stack, leaf)
	for k := f.n; k&1 == 1; k >>= 1 {
		top := len(f.stack) - 1
		f.stack[top-1] = tlog.NodeHash(f.stack[top-1], f.stack[top])
		f.stack = f.stack[:top]
	}
	f.n++
}

// Root is the Merkle tree hash of the leaves added so far.
func (f *Frontier) Root() tlog.Hash {
	if f.n == 0 {
		var none tlog.HashReaderFunc = func([]int64) ([]tlog.Hash, error) { return nil, errors.New("empty") }
		h, _ := tlog.TreeHash(0, none)
		return h
	}
	h := f.stack[len(f.stack)-1]
	for i := len(f.stack) - 2; i >= 0; i-- {
		h = tlog.NodeHash(f.stack[i], h)
	}
	return h
}

// FirstLineHash is the SHA-256 (hex) of a log's first line, however long
// (a session record holds the whole policy), or "" when r does not begin
// with a record. With the record count it names a log's content without
// a second full read: two logs share a first record only if one is a
// copy of the other, as it holds its time, session and policy.
func FirstLineHash(r io.Reader) (string, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if head, _ := br.Peek(len(linePrefix + "0,")); string(head) != linePrefix+"0," {
		return "", nil
	}
	h := sha256.New()
	for n := int64(0); n <= maxLine; {
		chunk, err := br.ReadSlice('\n')
		h.Write(chunk)
		n += int64(len(chunk))
		if err != bufio.ErrBufferFull {
			if err != nil && err != io.EOF {
				return "", err
			}
			break
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
