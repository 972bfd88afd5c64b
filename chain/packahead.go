package chain

import (
	"errors"
	"io"
	"sync"
	"time"
)

// An offline reader (verify, shadow, report) takes a log's outputs in the
// order the log was written, and the packs hold them in that order too:
// one read per output was a tenth of a full verify's CPU on a log of many
// small outputs, in system calls alone. A store opened with ReadEvidence
// reads a window of the segment at a time and serves the entries in it
// from memory.
//
// Bytes in a segment change after they are written only where a purge
// wipes an entry, or where a writer whose write failed cuts the segment
// back and writes the next entry over the torn bytes. So a window serves
// entries only for windowTTL after it was read (an output purged since
// can be given back, as a read made then would have), and every window
// is let go as soon as a read from one does not match what was asked, or
// what it gave does not hash to its digest: the disk is read again. Only
// a store opened to be read through gets windows, never one a writer,
// repair or purge uses, whose view of what is stored must be the disk's.

// windowSize is how much of a segment one read takes in, and windowCount
// how many such windows a store keeps, so that workers reading apart (one
// may be thousands of records behind another) do not take each other's.
// Entries are served from a window only when whole in it; a request of
// more than half a window is read alone.
const (
	windowSize  = 32 << 10
	windowCount = 4
	windowTTL   = 100 * time.Millisecond
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
	used int       // the clock when last used, to replace the least recent
	at   time.Time // when it was read
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
	now := time.Now()
	holds := func(c *window) bool {
		return c.seg == seg && off >= c.off && off+int64(len(p)) <= c.off+int64(len(c.buf)) && now.Sub(c.at) < windowTTL
	}
	w := &ws.w[0]
	for i := range ws.w {
		c := &ws.w[i]
		if holds(c) {
			w = c
			break
		}
		if c.used < w.used {
			w = c
		}
	}
	if !holds(w) {
		if cap(w.buf) < windowSize {
			w.buf = make([]byte, windowSize)
		}
		n, err := seg.f.ReadAt(w.buf[:windowSize], off)
		ws.reads++
		if err != nil && !errors.Is(err, io.EOF) {
			w.seg, w.buf = nil, w.buf[:0]
			return 0, err
		}
		w.seg, w.off, w.buf, w.at = seg, off, w.buf[:n], now
	}
	w.used = ws.clock
	n := copy(p, w.buf[off-w.off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// forget lets every window go: what one held did not match the disk's
// entry, or its digest, and the next reads must see the disk.
func (s *store) forget() {
	ws := s.win
	if ws == nil {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for i := range ws.w {
		ws.w[i].seg = nil
	}
}
