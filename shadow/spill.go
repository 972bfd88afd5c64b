package shadow

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"bailiff/engine"
)

// spill keeps every change of a diff in bounded memory: changes gather in
// memory up to spillBytes, and each full batch is sorted and written to
// one temporary file as a run; reading merges the runs with what is still
// in memory. A policy change can touch every call of months of logs, and
// every one of them is listed, so holding them all would make memory grow
// with history.
type spill struct {
	mem   []Change
	bytes int
	f     *os.File
	name  string // the file's name while it could not be removed
	runs  []section
	end   int64
	err   error
	buf   []byte
}

type section struct{ off, n int64 }

// spillBytes bounds the changes held in memory at once (about; a change
// is counted by its strings).
var spillBytes = 8 << 20

func (s *spill) add(c Change) {
	if s.err != nil {
		return
	}
	s.bytes += c.size()
	s.mem = append(s.mem, c)
	if s.bytes >= spillBytes {
		if err := s.flush(); err != nil {
			s.err = errSpill(err)
		}
	}
}

// flush writes what is in memory as one sorted run.
func (s *spill) flush() error {
	slices.SortStableFunc(s.mem, compareChanges)
	if s.f == nil {
		f, err := os.CreateTemp("", "bailiff-changes-*")
		if err != nil {
			return err
		}
		s.f = f
		// Unlinked while open, the file goes with the process however
		// it ends; where that is refused, Close removes it.
		if os.Remove(f.Name()) != nil {
			s.name = f.Name()
		}
	}
	w := bufio.NewWriterSize(io.NewOffsetWriter(s.f, s.end), 1<<16)
	var n int64
	for i := range s.mem {
		s.buf = appendChange(s.buf[:0], &s.mem[i])
		k, err := w.Write(s.buf)
		n += int64(k)
		if err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	s.runs = append(s.runs, section{s.end, n})
	s.end += n
	clear(s.mem)
	s.mem, s.bytes = s.mem[:0], 0
	return nil
}

// each calls fn with every change, in changeBefore's order (changes with
// the same key in the order they were added). It may be called again.
func (s *spill) each(fn func(*Change) error) error {
	if s.err != nil {
		return s.err
	}
	slices.SortStableFunc(s.mem, compareChanges)
	if len(s.runs) == 0 {
		for i := range s.mem {
			if err := fn(&s.mem[i]); err != nil {
				return err
			}
		}
		return nil
	}
	var h merge
	for i, r := range s.runs {
		c := &cursor{rank: i, r: newRunReader(s.f, r), left: r.n}
		if err := h.push(c); err != nil {
			return errSpill(err)
		}
	}
	h.push(&cursor{rank: len(s.runs), mem: s.mem})
	for len(h) > 0 {
		c := h[0]
		if err := fn(&c.cur); err != nil {
			return err
		}
		ok, err := c.next()
		if err != nil {
			return errSpill(err)
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return nil
}

// close removes the temporary file.
func (s *spill) close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	if s.name != "" {
		if rerr := os.Remove(s.name); err == nil {
			err = rerr
		}
	}
	s.f = nil
	return err
}

func newRunReader(f *os.File, r section) *bufio.Reader {
	return bufio.NewReaderSize(io.NewSectionReader(f, r.off, r.n), 16<<10)
}

// cursor reads one run: from the file, or the changes still in memory.
type cursor struct {
	rank int // runs in the order they were written; memory last
	r    *bufio.Reader
	left int64
	mem  []Change
	cur  Change
}

func (c *cursor) next() (bool, error) {
	if c.r == nil {
		if len(c.mem) == 0 {
			return false, nil
		}
		c.cur, c.mem = c.mem[0], c.mem[1:]
		return true, nil
	}
	if c.left == 0 {
		return false, nil
	}
	d := decoder{r: c.r, left: c.left}
	readChange(&d, &c.cur)
	c.left = d.left
	return d.err == nil, d.err
}

// merge is a heap of cursors by their current change.
type merge []*cursor

func (h *merge) push(c *cursor) error {
	ok, err := c.next()
	if err != nil || !ok {
		return err
	}
	heap.Push(h, c)
	return nil
}

func (h merge) Len() int { return len(h) }
func (h merge) Less(i, j int) bool {
	a, b := &h[i].cur, &h[j].cur
	switch {
	case changeBefore(a, b):
		return true
	case changeBefore(b, a):
		return false
	}
	return h[i].rank < h[j].rank
}
func (h merge) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *merge) Push(x any)   { *h = append(*h, x.(*cursor)) }
func (h *merge) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// appendChange encodes a change: every string and byte field with its
// length first, numbers as varints.
func appendChange(b []byte, c *Change) []byte {
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	b = binary.AppendUvarint(b, uint64(categoryRank(c.Category)))
	str(c.File)
	str(c.Session)
	b = binary.AppendVarint(b, int64(c.Pos))
	str(c.ID)
	str(c.Tool)
	for _, o := range []*Outcome{&c.Baseline, &c.Candidate} {
		str(string(o.Verdict))
		str(string(o.Check))
		str(o.Rule)
		str(o.Reason)
		if o.Unevaluable {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(c.Args)))
	b = append(b, c.Args...)
	str(c.ArgsErr)
	b = binary.AppendUvarint(b, uint64(len(c.Redacted)))
	for _, r := range c.Redacted {
		str(r)
	}
	return b
}

// decoder reads what appendChange wrote, within a run's bytes: a length
// is never trusted past them, so a damaged file fails rather than
// allocates what it claims.
type decoder struct {
	r    *bufio.Reader
	left int64
	err  error
}

var errDamaged = errors.New("the file was changed under bailiff")

// ReadByte reads one byte of the run, for the varints.
func (d *decoder) ReadByte() (byte, error) {
	if d.err != nil {
		return 0, d.err
	}
	if d.left <= 0 {
		d.err = errDamaged
		return 0, d.err
	}
	b, err := d.r.ReadByte()
	if err != nil {
		d.err = err
		return 0, err
	}
	d.left--
	return b, nil
}

func (d *decoder) uvarint() uint64 {
	v, err := binary.ReadUvarint(d)
	if err != nil && d.err == nil {
		d.err = err
	}
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(d.left) {
		d.err = errDamaged
		return nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(d.r, b); err != nil {
		d.err = err
		return nil
	}
	d.left -= int64(n)
	return b
}

func (d *decoder) str() string { return string(d.bytes()) }

func readChange(d *decoder, c *Change) {
	cats := Categories()
	rank := d.uvarint()
	if d.err == nil && rank >= uint64(len(cats)) {
		d.err = fmt.Errorf("%w (category %d)", errDamaged, rank)
	}
	if d.err != nil {
		return
	}
	*c = Change{Category: cats[rank], File: d.str(), Session: d.str()}
	pos, err := binary.ReadVarint(d)
	if err != nil && d.err == nil {
		d.err = err
	}
	c.Pos, c.ID, c.Tool = int(pos), d.str(), d.str()
	for _, o := range []*Outcome{&c.Baseline, &c.Candidate} {
		o.Verdict, o.Check, o.Rule, o.Reason = engine.Verdict(d.str()), engine.Check(d.str()), d.str(), d.str()
		flag, _ := d.ReadByte()
		o.Unevaluable = flag == 1
	}
	c.Args = d.bytes()
	c.ArgsErr = d.str()
	n := d.uvarint()
	if n > uint64(d.left) {
		d.err = errDamaged
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		c.Redacted = append(c.Redacted, d.str())
	}
}
