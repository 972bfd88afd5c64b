package chain

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// packWriter appends to the one segment this store made.
type packWriter struct {
	seg  *segment
	data *os.File // open for writing: the segment's own, or one of its own for one taken up
	lock *os.File // holds the segment's lock; closed to let it go
	idx  *os.File // nil once a write to it failed: the index stays a prefix
}

// done lets the segment go: its lock, and what was opened to write it.
func (w *packWriter) done() {
	if w.idx != nil {
		w.idx.Close()
	}
	if w.lock != nil {
		w.lock.Close()
	}
	if w.data != w.seg.f {
		w.data.Close()
	}
}

// lockSegment takes the lock a writer holds on the segment at name, on
// a descriptor of its own, so closing it lets the segment go while it
// stays open for reading. Where locks are not offered it fails, and a
// store never takes a segment up.
func lockSegment(name string) (*os.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// problem is why some content may be in the store and not be found: a
// segment that cannot be read, or bytes past a segment's last whole
// entry that no writer is adding to (a torn write, or damage). Content
// not found is then not known to be missing.
func (s *store) problem() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, g := range s.segs {
		if g.bad != nil {
			return g.bad
		}
	}
	for _, g := range s.segs {
		name := segName(s.dir, g.num, segData)
		if len(g.gaps) > 0 {
			return fmt.Errorf("%s is damaged: %d bytes at offset %d read as no entry", filepath.Base(name), g.gaps[0].to-g.gaps[0].from, g.gaps[0].from)
		}
		if g != s.wseg() && g.f != nil && g.size > g.end && !InUse(name) {
			return fmt.Errorf("%s has %d bytes past its last whole entry, at offset %d: a torn write, or damage", filepath.Base(name), g.size-g.end, g.end)
		}
	}
	return nil
}

// put appends data under key unless an entry for it is there and not
// purged. key is data's digest, except where an altered content is
// copied as it is. With sync, put returns once the entry is on disk.
func (s *store) put(key [sha256.Size]byte, data []byte, sync bool) error {
	s.mu.Lock()
	if !s.loaded {
		if err := s.refresh(); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	// Put once only into a segment this store wrote, whose bytes no crash
	// came between, and whose syncs it knows; an entry anywhere else may
	// be damaged or never synced, and costs a second copy. Another
	// process may have purged it meanwhile: then it is stored again.
	if l, ok := s.holds(key); ok && l.seg.mine && l.off >= l.seg.mineFrom && !l.seg.failed() && !(s.readPurged() == nil && s.purged[key]) {
		s.mu.Unlock()
		if sync {
			return s.syncTo(l.seg, l.off+l.n)
		}
		return nil
	}
	g, err := s.append(key, data)
	end := g.end
	s.mu.Unlock()
	if err != nil || !sync {
		return err
	}
	return s.syncTo(g, end)
}

// append writes one entry to this store's own segment, made first if
// there is none (or it is full, or a sync of it failed). Called with mu
// held.
func (s *store) append(key [sha256.Size]byte, data []byte) (*segment, error) {
	if s.w == nil || s.w.seg.end > packLimit || s.w.seg.failed() {
		if err := s.newSegment(); err != nil {
			return &segment{}, err
		}
	}
	g := s.w.seg
	buf := make([]byte, entryHead, entryHead+len(data))
	copy(buf, key[:])
	binary.BigEndian.PutUint64(buf[sha256.Size:], uint64(len(data)))
	buf = append(buf, data...)
	if _, err := s.w.data.WriteAt(buf, g.end); err != nil {
		// Part of it may be there: cut it, so no head can be read
		// there; the next entry is written over whatever is left.
		s.w.data.Truncate(g.end)
		return g, err
	}
	if s.w.idx != nil {
		ie := make([]byte, indexEntry)
		copy(ie, key[:])
		binary.BigEndian.PutUint64(ie[sha256.Size:], uint64(g.end))
		binary.BigEndian.PutUint64(ie[sha256.Size+8:], uint64(len(data)))
		if _, err := s.w.idx.Write(ie); err != nil {
			s.w.idx.Close()
			s.w.idx = nil
		}
	}
	s.add(key, loc{seg: g, off: g.end + entryHead, n: int64(len(data))})
	g.end += int64(len(buf))
	g.written.Store(g.end)
	return g, nil
}

// syncTo returns once g is on disk up to end, and the names that lead to
// it. Puts waiting while a sync runs share the next one: one fsync
// carries every entry written before it started (group commit). A failed
// sync fails every later one of g, and the store writes a new segment:
// after a failed fsync the kernel may have dropped the pages, and a second
// fsync that succeeds proves nothing.
func (s *store) syncTo(g *segment, end int64) error {
	g.sync.Lock()
	defer g.sync.Unlock()
	if g.syncErr != nil {
		return g.syncErr
	}
	if g.durable >= end {
		return nil
	}
	// Not under mu: Close and newSegment hold mu while they wait for
	// the sync lock, so taking mu here would deadlock with them.
	target := g.written.Load()
	err := syncFile(g.f)
	if err == nil && !g.named {
		// The segment's name, and the store's in its directory, must
		// survive a crash with the entries a synced record names.
		if err = syncDir(filepath.Dir(s.dir)); err == nil {
			err = syncDir(s.dir)
		}
		g.named = err == nil
	}
	if err != nil {
		g.syncErr = err
		g.syncFailed.Store(true)
		return err
	}
	g.durable = target
	return nil
}

// syncFile syncs a segment; a variable so a test can fail it.
var syncFile = (*os.File).Sync

// failed says whether a sync of g failed, without waiting for one that
// runs.
func (g *segment) failed() bool { return g.syncFailed.Load() }

// newSegment makes the next segment and its index for this store to
// append to (or, the first time, takes up the last one: takeUp). The
// number is past every segment there, and taken only if no other writer
// took it first.
func (s *store) newSegment() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	if s.w != nil {
		s.closeWriter()
	} else if g := s.takeUp(); g != nil {
		return nil
	}
	nums, err := segNums(s.dir)
	if err != nil {
		return err
	}
	next := 1
	if len(nums) > 0 {
		next = nums[len(nums)-1] + 1
	}
	for _, g := range s.segs {
		next = max(next, g.num+1)
	}
	var f *os.File
	for ; ; next++ {
		f, err = os.OpenFile(segName(s.dir, next, segData), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	// Held while this store writes it, so a purge tells a segment being
	// written from one a crash left torn, and no other store takes it up.
	lock, _ := lockSegment(segName(s.dir, next, segData))
	if _, err := f.Write([]byte(packMagic)); err != nil {
		f.Close()
		if lock != nil {
			lock.Close()
		}
		return err
	}
	idx, err := os.OpenFile(segName(s.dir, next, segIndex), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err == nil {
		if _, werr := idx.Write([]byte(indexMagic)); werr != nil {
			idx.Close()
			idx = nil
		}
	} else {
		idx = nil
	}
	g := &segment{num: next, f: f, end: int64(len(packMagic)), size: -1, mine: true}
	g.written.Store(g.end)
	s.addSegment(g)
	s.w = &packWriter{seg: g, data: f, lock: lock, idx: idx}
	return nil
}

// closeWriter syncs and closes what this store wrote; its segment stays
// open for reading, and is never appended to again.
func (s *store) closeWriter() error {
	w := s.w
	s.w = nil
	w.seg.sync.Lock()
	defer w.seg.sync.Unlock()
	defer w.done()
	if w.seg.syncErr != nil {
		return w.seg.syncErr
	}
	err := syncFile(w.seg.f)
	if err == nil && !w.seg.named {
		err = syncDir(s.dir)
		w.seg.named = err == nil
	}
	if err == nil {
		w.seg.durable = w.seg.end
	}
	return err
}

// markPurged appends key's purge mark, synced.
func (s *store) markPurged(key [sha256.Size]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.readPurged(); err != nil {
		return err
	}
	if s.purged[key] {
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	name := filepath.Join(s.dir, purgedName)
	if st, err := os.Lstat(name); err == nil && !st.Mode().IsRegular() {
		return &notPack{purgedName, "is not a regular file"}
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	line := fmt.Sprintf("sha256:%x\n", key[:])
	// A last line without its newline (a torn append, or an edit) must
	// not swallow this mark.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			line = "\n" + line
		}
	}
	_, err = f.WriteString(line)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	s.purged[key] = true
	return nil
}

// takeUp makes the store's last segment its own to append to, when no
// writer holds it, it ends in a whole entry its index names, and it has
// room: a gateway run once per client session would otherwise leave a
// segment (two files) per session. Its entries from before stay out of
// deduplication (mineFrom): this store did not write them. Called with
// mu held, the store loaded.
func (s *store) takeUp() *segment {
	if len(s.segs) == 0 {
		return nil
	}
	g := s.segs[len(s.segs)-1]
	name := segName(s.dir, g.num, segData)
	if g.bad != nil || g.f == nil || g.full {
		return nil
	}
	if st, err := os.Lstat(name); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	lock, err := lockSegment(name)
	if err != nil {
		return nil
	}
	// Under the lock no one else appends; check what is there now.
	if s.catchUp(g) != nil || g.size != g.end || g.indexed != g.end || g.end > packLimit {
		lock.Close()
		return nil
	}
	data, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		lock.Close()
		return nil
	}
	idx, err := os.OpenFile(segName(s.dir, g.num, segIndex), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		data.Close()
		lock.Close()
		return nil
	}
	g.mine, g.mineFrom = true, g.end
	g.written.Store(g.end)
	s.w = &packWriter{seg: g, data: data, lock: lock, idx: idx}
	return g
}
