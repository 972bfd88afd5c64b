package chain

import (
	"errors"
	"io"
	"sync"
)

// An offline reader (verify, shadow, report) takes a log's outputs in the
// order the log was written, and the packs hold them in that order too:
// one read per output was a tenth of a full verify's CPU on a log of many
// small outputs, in system calls alone. A store opened with ReadEvidence
// reads a window of the segment at a time and serves the entries in it
// from memory.
//
// Bytes in a segment are only ever appended, except by a purge, which
// overwrites an entry: a window read before a purge that another process
// runs meanwhile can still give the purged bytes (they still hash to
// their digest), as a read a moment earlier would have. That is why only
// a store opened to be read through gets a window, never one a writer or
// a purge uses, whose view of what is stored must be the disk's.

// windowSize is how much of a segment one read takes in, and windowCount
// how many such windows a store keeps, so that workers reading apart (one
// may be thousands of records behind another) do not take each other's.
// Entries are served from a window only when whole in it; a request of
// more than half a window is read alone.
const (
	windowSize  = 32 << 10
	windowCount = 4
)

type windows struct {
	mu    sync.Mutex
	w     [windowCount]window
	clock int
	reads int // reads of the disk they made: a test counts them
}

type window struct {
	seg  *segment
	off  int64 // where buf starts in seg
	buf  []byte
	used int // the clock when last used, to replace the least recent
}

// ReadEvidence is the store in dir opened to be read, not written: what
// an offline reader of the log uses. Reads go a window at a time.
func ReadEvidence(dir string) Evidence {
	e := OpenEvidence(dir)
	e.s.win = &windows{}
	return e
}

// readAt is seg.f.ReadAt(p, off), through the store's windows when it has
// them.
func (s *store) readAt(seg *segment, p []byte, off int64) (int, error) {
	ws := s.win
	if ws == nil || len(p) > windowSize/2 {
		return seg.f.ReadAt(p, off)
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.clock++
	w := &ws.w[0]
	for i := range ws.w {
		c := &ws.w[i]
		if c.seg == seg && off >= c.off && off+int64(len(p)) <= c.off+int64(len(c.buf)) {
			w = c
			break
		}
		if c.used < w.used {
			w = c
		}
	}
	if w.seg != seg || off < w.off || off+int64(len(p)) > w.off+int64(len(w.buf)) {
		if cap(w.buf) < windowSize {
			w.buf = make([]byte, windowSize)
		}
		n, err := seg.f.ReadAt(w.buf[:windowSize], off)
		ws.reads++
		if err != nil && !errors.Is(err, io.EOF) {
			w.seg, w.buf = nil, w.buf[:0]
			return 0, err
		}
		w.seg, w.off, w.buf = seg, off, w.buf[:n]
	}
	w.used = ws.clock
	n := copy(p, w.buf[off-w.off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
