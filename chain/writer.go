package chain

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// Durability says when an appended record reaches the disk.
type Durability int

// The durability modes.
const (
	// Sync writes and fsyncs every record before Append returns (a lazy
	// one, with the next record that is not): a call record is on disk
	// before the call is forwarded. The default.
	Sync Durability = iota
	// Batch writes every record at once and fsyncs every batchSize
	// records and on Sync and Close: a crash of the machine (not of the
	// process) can lose the records since the last fsync.
	Batch
	// None writes every record at once and leaves flushing to the
	// operating system.
	None
)

// batchSize is how many records Batch durability writes between fsyncs.
const batchSize = 64

// ParseDurability reads a --durability value.
func ParseDurability(s string) (Durability, error) {
	switch s {
	case "sync", "":
		return Sync, nil
	case "batch":
		return Batch, nil
	case "none":
		return None, nil
	}
	return Sync, fmt.Errorf("unknown durability %q (want sync, batch or none)", s)
}

func (d Durability) String() string {
	return [...]string{"sync", "batch", "none"}[d]
}

// syncer is a file that can be flushed to disk.
type syncer interface{ Sync() error }

// Writer appends records to a log. It is the log's only writer (Open
// holds an exclusive lock on the file) and is safe for concurrent use.
// After a failed write it refuses every later append: a gap in what was
// written must not be papered over.
type Writer struct {
	mu       sync.Mutex
	w        io.Writer
	dur      Durability
	next     int64
	prev     tlog.Hash
	last     time.Time // the time of the last record
	unsynced int
	err      error
	close    func() error

	// syncMu is held while the file is synced, without mu, so records
	// are written while a sync runs; durable is how many records are on
	// disk (only under syncMu). Appends waiting while a sync runs share
	// the next one (group commit).
	syncMu  sync.Mutex
	durable int64
}

// NewWriter starts a new, empty log on w. If w has a Sync method (an
// *os.File does), durability applies; otherwise records are only written.
func NewWriter(w io.Writer, dur Durability) *Writer {
	return &Writer{w: w, dur: dur}
}

// Open opens the log at name for appending, creating it if it does not
// exist, and locks it against other writers. An existing log must end in
// a whole record whose hash is right; a torn last line is refused (cut it
// with Repair first).
func Open(name string, dur Durability) (*Writer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	next, prev, last, err := tail(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	w := &Writer{w: f, dur: dur, next: next, prev: prev, last: last, close: f.Close}
	return w, nil
}

// ErrLocked is returned by Open when another writer holds the log.
var ErrLocked = errors.New("the log is locked by another writer")

// tail reads the last record of an existing log to continue after it.
func tail(f *os.File) (int64, tlog.Hash, time.Time, error) {
	var (
		none tlog.Hash
		zero time.Time
	)
	st, err := f.Stat()
	if err != nil {
		return 0, none, zero, err
	}
	size := st.Size()
	if size == 0 {
		return 0, none, zero, nil
	}
	// Read backwards until the buffer holds the whole last line.
	chunk := int64(64 << 10)
	for {
		if chunk > size {
			chunk = size
		}
		buf := make([]byte, chunk)
		if _, err := f.ReadAt(buf, size-chunk); err != nil && err != io.EOF {
			return 0, none, zero, err
		}
		if buf[len(buf)-1] != '\n' {
			return 0, none, zero, &VerifyError{Seq: -1, Offset: size, Reason: "the log ends in a torn line: run bailiff repair first", Torn: true}
		}
		body := buf[:len(buf)-1]
		i := bytes.LastIndexByte(body, '\n')
		if i < 0 && chunk < size {
			if chunk >= maxLine {
				return 0, none, zero, errors.New("last line is longer than the longest record")
			}
			chunk *= 2
			continue
		}
		line := body[i+1:]
		r, err := Parse(line)
		if err != nil {
			return 0, none, zero, fmt.Errorf("last record: %v", err)
		}
		return r.Seq + 1, r.Hash, r.TS, nil
	}
}

// Next is the seq the next appended record will have.
func (w *Writer) Next() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.next
}

// Last is the time of the log's last record (zero for an empty log).
func (w *Writer) Last() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// Append seals and writes one record whose body is v (a body value, or
// nil for none) and returns it once it is as durable as the writer's mode
// promises.
func (w *Writer) Append(ts time.Time, session string, kind Kind, v any) (Record, error) {
	return w.append(ts, session, kind, v, true)
}

// AppendLazy is Append for a record that need not be on disk before
// anything else happens: with Sync durability it is not fsynced itself,
// but reaches the disk with the next Append, Sync or Close. The log is one
// file, so a later record that is on disk has every earlier one on disk
// with it: a crash loses only lazy records written after the last
// durable one, never one a durable record came after.
func (w *Writer) AppendLazy(ts time.Time, session string, kind Kind, v any) (Record, error) {
	return w.append(ts, session, kind, v, false)
}

func (w *Writer) append(ts time.Time, session string, kind Kind, v any, durable bool) (Record, error) {
	body := []byte("{}")
	if v != nil {
		var err error
		if body, err = marshalBody(v); err != nil {
			return Record{}, err
		}
	}
	if !knownKind(kind) {
		return Record{}, fmt.Errorf("unknown record kind %q", kind)
	}
	if err := CheckTime(ts); err != nil {
		return Record{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return Record{}, w.err
	}
	rec, line := seal(w.next, ts, session, kind, body, w.prev)
	line = append(line, '\n')
	// One write per record, so a killed process leaves at worst a partial
	// last line, never an interleaving.
	if _, err := w.w.Write(line); err != nil {
		w.err = fmt.Errorf("write record %d: %w", rec.Seq, err)
		return Record{}, w.err
	}
	w.next++
	w.prev = rec.Hash
	w.last = rec.TS
	w.unsynced++
	if (w.dur == Sync && durable) || (w.dur == Batch && w.unsynced >= batchSize) {
		// Synced without mu: other records are written meanwhile, and
		// the next sync carries them all.
		n := w.next
		w.mu.Unlock()
		err := w.syncTo(n)
		w.mu.Lock()
		if err != nil {
			return Record{}, err
		}
	}
	return rec, nil
}

// Sync flushes every record written so far to disk.
func (w *Writer) Sync() error {
	w.mu.Lock()
	n := w.next
	w.mu.Unlock()
	return w.syncTo(n)
}

// syncTo returns once the first n records are on disk. A sync that
// fails fails the writer: after a failed fsync the kernel may have
// dropped the pages, and a later fsync that succeeds proves nothing.
func (w *Writer) syncTo(n int64) error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	w.mu.Lock()
	err, target, pending := w.err, w.next, w.unsynced
	w.mu.Unlock()
	if err != nil || w.durable >= n {
		return err
	}
	if s, ok := w.w.(syncer); ok && w.dur != None && pending > 0 {
		if err := s.Sync(); err != nil {
			w.mu.Lock()
			if w.err == nil {
				w.err = fmt.Errorf("sync: %w", err)
			}
			err = w.err
			w.mu.Unlock()
			return err
		}
	}
	w.mu.Lock()
	// What was written after target waits for a sync of its own.
	w.unsynced -= pending
	w.mu.Unlock()
	w.durable = target
	return nil
}

// Close syncs (except with None durability) and closes the file Open
// opened.
func (w *Writer) Close() error {
	err := w.Sync()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.close != nil {
		if cerr := w.close(); err == nil {
			err = cerr
		}
		w.close = nil
	}
	return err
}
