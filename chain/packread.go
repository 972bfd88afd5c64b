package chain

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

func (s *store) addSegment(g *segment) {
	g.i = int32(len(s.segs))
	s.segs = append(s.segs, g)
}

func (s *store) add(key [sha256.Size]byte, l loc) {
	if l.off < maxPlaceOff && l.seg.i < maxSegs {
		s.idx.add(key, mkplace(l.seg.i, l.off), s.headKey)
	}
}

// loc is where p is; its length is not known until its head is read.
func (s *store) loc(p place) loc { return loc{seg: s.segs[p.seg()], off: p.off(), n: -1} }

// head reads the digest and length the head of the entry at p names.
func (s *store) head(p place) ([sha256.Size]byte, int64, bool) {
	var key [sha256.Size]byte
	g := s.segs[p.seg()]
	if g.f == nil {
		return key, 0, false
	}
	buf := make([]byte, entryHead)
	if _, err := g.f.ReadAt(buf, p.off()-entryHead); err != nil {
		return key, 0, false
	}
	copy(key[:], buf)
	return key, int64(binary.BigEndian.Uint64(buf[sha256.Size:])), true
}

func (s *store) headKey(p place) ([sha256.Size]byte, bool) {
	k, _, ok := s.head(p)
	return k, ok
}

// holds reports where key's latest entry is, its head checked. Called
// with mu held.
func (s *store) holds(key [sha256.Size]byte) (loc, bool) {
	p, ok := s.idx.find(key)
	if !ok {
		return loc{}, false
	}
	h, n, ok := s.head(p)
	if !ok || h != key || n < 0 || n > maxEntry {
		return loc{}, false
	}
	l := s.loc(p)
	l.n = n
	return l, true
}

// rebuild forgets g's entries and reads its segment from the start, its
// index ignored: the index named an entry the segment does not hold, or a
// purge must not trust it. Called with mu held.
func (s *store) rebuild(g *segment) error {
	s.idx.drop(g.i)
	g.full, g.end, g.size, g.gaps = true, int64(len(packMagic)), -1, nil
	if g.f == nil {
		return nil
	}
	st, err := g.f.Stat()
	if err != nil {
		return err
	}
	g.size = st.Size()
	return s.scan(g, g.size)
}

// readPurged reads the purge marks added since the last read; a torn
// last line waits for the rest of it. Called with mu held.
func (s *store) readPurged() error {
	name := filepath.Join(s.dir, purgedName)
	// Asked on every deduplicated Put: nothing new is one lstat.
	if st, err := os.Lstat(name); err == nil && st.Mode().IsRegular() && st.Size() <= s.pread {
		return nil
	}
	f, err := regular(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() <= s.pread {
		return err
	}
	if _, err := f.Seek(s.pread, io.SeekStart); err != nil {
		return err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	for {
		line, rest, ok := bytes.Cut(data, []byte{'\n'})
		if !ok {
			return nil
		}
		s.pread += int64(len(line)) + 1
		data = rest
		if key, ok := ParseDigest(string(line)); ok {
			s.purged[key] = true
		}
	}
}

// isPurged reads the purge marks again and says whether key is marked:
// another process may have purged it since this store last looked.
func (s *store) isPurged(key [sha256.Size]byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readPurged()
	return s.purged[key]
}

// ParseDigest reads "sha256:<64 lower-case hex>", the one form Digest
// writes, into its bytes; ok is false for any other text.
func ParseDigest(d string) (key [sha256.Size]byte, ok bool) {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 2*sha256.Size {
		return key, false
	}
	var bad byte
	for i := range key {
		hi, lo := hexVal[h[2*i]], hexVal[h[2*i+1]]
		bad |= hi | lo
		key[i] = hi<<4 | lo&0x0f
	}
	if bad&0x80 != 0 {
		return [sha256.Size]byte{}, false
	}
	return key, true
}

// DigestOf is the digest text of key: "sha256:<hex>".
func DigestOf(key [sha256.Size]byte) string { return "sha256:" + hex.EncodeToString(key[:]) }

// lookup finds where key's entry may be; with refresh, it reads what was
// added on disk first when the index has no candidate.
func (s *store) lookup(key [sha256.Size]byte, refresh bool) (loc, bool, error) {
	s.mu.RLock()
	p, ok := s.idx.find(key)
	loaded := s.loaded
	var l loc
	if ok {
		l = s.loc(p)
	}
	s.mu.RUnlock()
	if (ok || !refresh) && loaded {
		return l, ok, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.refresh()
	p, ok = s.idx.find(key)
	if ok {
		l = s.loc(p)
	}
	return l, ok, err
}

// read returns the bytes of the entry at l, and whether its head names
// key (an entry found by the first bytes of its digest may be another
// content's, and an index may point at the wrong entry). An entry whose
// length is not known yet is read with a guess, most outputs being
// small, so one read is enough for them.
func (s *store) read(key [sha256.Size]byte, l loc) ([]byte, bool, error) {
	want := l.n
	if want < 0 {
		want = 4096 - entryHead
	}
	buf := make([]byte, entryHead+want)
	got, err := s.readAt(l.seg, buf, l.off-entryHead)
	if err != nil && !(errors.Is(err, io.EOF) && got >= entryHead) {
		return nil, false, err
	}
	n := int64(binary.BigEndian.Uint64(buf[sha256.Size:]))
	if !bytes.Equal(buf[:sha256.Size], key[:]) || (l.n >= 0 && n != l.n) || n < 0 || n > maxEntry {
		return nil, false, nil
	}
	if entryHead+n <= int64(got) {
		return buf[entryHead : entryHead+n], true, nil
	}
	// Longer than guessed: its length was checked to fit the segment
	// when it was found, but the head may have been edited since.
	if st, err := l.seg.f.Stat(); err != nil || l.off+n > st.Size() {
		return nil, false, err
	}
	data := make([]byte, n)
	copy(data, buf[entryHead:got])
	if _, err := l.seg.f.ReadAt(data[got-entryHead:], l.off+int64(got-entryHead)); err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// get returns the bytes of key's latest entry and whether the packs hold
// one; with refresh, it reads what was added on disk when they do not.
func (s *store) get(key [sha256.Size]byte, refresh bool) ([]byte, bool, error) {
	l, ok, err := s.lookup(key, refresh)
	if !ok {
		return nil, false, err
	}
	data, match, err := s.read(key, l)
	if err != nil || match {
		return data, match, err
	}
	// Another content's entry, or an index that points at the wrong
	// one: read the segment from its start (once), then look again,
	// from the disk.
	s.forget()
	s.mu.Lock()
	if !l.seg.full {
		err = s.rebuild(l.seg)
	}
	l, ok = s.holds(key)
	s.mu.Unlock()
	if !ok {
		return nil, false, err
	}
	return s.read(key, l)
}

// good returns the bytes of an entry of key that hash to it, when the
// latest does not: content stored twice, whose later copy a crash or an
// edit damaged, is still there.
func (s *store) good(key [sha256.Size]byte) ([]byte, bool) {
	s.mu.RLock()
	var ls []loc
	for _, p := range s.idx.all(key, s.headKey) {
		ls = append(ls, s.loc(p))
	}
	s.mu.RUnlock()
	for _, l := range ls {
		if data, match, err := s.read(key, l); err == nil && match && sha256.Sum256(data) == key {
			return data, true
		}
	}
	return nil, false
}
