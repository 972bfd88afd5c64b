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
	seg *segment
	idx *os.File // nil once a write to it failed: the index stays a prefix
}

// get returns the bytes stored under key and whether the packs hold an
// entry for it at all.
func (s *store) get(key [sha256.Size]byte) ([]byte, bool, error) {
	l, ok, err := s.lookup(key)
	if !ok {
		return nil, false, err
	}
	data, match, err := s.read(key, l)
	if err != nil || match {
		return data, true, err
	}
	s.mu.Lock()
	s.rebuild(l.seg)
	l, ok = s.at[key]
	s.mu.Unlock()
	if !ok {
		return nil, false, nil
	}
	data, match, err = s.read(key, l)
	if err == nil && !match {
		err = fmt.Errorf("evidence pack %s changed while it was read", filepath.Base(segName(s.dir, l.seg.num, segData)))
	}
	return data, true, err
}

// problem is why some segment cannot be read, if one cannot: content not
// found is then not known to be missing.
func (s *store) problem() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, g := range s.segs {
		if g.bad != nil {
			return g.bad
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
	if l, ok := s.at[key]; ok && !s.purged[key] && !l.seg.failed() {
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
	if _, err := g.f.WriteAt(buf, g.end); err != nil {
		// What was written is past the entries, and the next entry is
		// written over it.
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
	s.mu.RLock()
	target := g.end
	s.mu.RUnlock()
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
// append to. The number is past every segment there, and taken only if
// no other writer took it first.
func (s *store) newSegment() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	if s.w != nil {
		s.closeWriter()
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
	if _, err := f.Write([]byte(packMagic)); err != nil {
		f.Close()
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
	g := &segment{num: next, f: f, end: int64(len(packMagic))}
	s.segs = append(s.segs, g)
	s.w = &packWriter{seg: g, idx: idx}
	return nil
}

// closeWriter syncs and closes what this store wrote; its segment stays
// open for reading, and is never appended to again.
func (s *store) closeWriter() error {
	w := s.w
	s.w = nil
	err := w.seg.f.Sync()
	if err == nil && !w.seg.named {
		err = syncDir(s.dir)
	}
	if w.idx != nil {
		if ierr := w.idx.Close(); err == nil {
			err = ierr
		}
	}
	return err
}

// markPurged appends key's purge mark, synced.
func (s *store) markPurged(key [sha256.Size]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loaded {
		if err := s.refresh(); err != nil {
			return err
		}
	}
	if s.purged[key] {
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, purgedName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "sha256:%x\n", key[:])
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

// wipe overwrites every entry of key with zeroes (punching a hole where
// the filesystem can, so the space is freed too) and syncs: a purged
// content's bytes are gone from the store, its entry's head stays.
func (s *store) wipe(key [sha256.Size]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return err
	}
	ls := append([]loc{}, s.extra[key]...)
	if l, ok := s.at[key]; ok {
		ls = append(ls, l)
	}
	for _, l := range ls {
		if err := zero(segName(s.dir, l.seg.num, segData), l.off, l.n); err != nil {
			return err
		}
	}
	return nil
}

func zero(name string, off, n int64) error {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if n > 0 && punchHole(f, off, n) != nil {
		z := make([]byte, min(n, 1<<20))
		for done := int64(0); done < n; {
			k := min(int64(len(z)), n-done)
			if _, err := f.WriteAt(z[:k], off+done); err != nil {
				return err
			}
			done += k
		}
	}
	return f.Sync()
}
