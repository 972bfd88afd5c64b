package chain

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// wipe overwrites the bytes of every entry of key with zeroes (punching a
// hole where the filesystem can, so the space is freed too) and syncs: a
// purged content's bytes are gone from the store, its entry's head stays.
// No index is trusted for it: every segment is read from its start. Bytes
// past a segment's last whole entry, which no writer holds, are zeroed
// too, since a torn or damaged entry there may hold the content; a
// segment that cannot be read at all fails the purge, after the rest.
func (s *store) wipe(key [sha256.Size]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return err
	}
	var unread []string
	for _, g := range s.segs {
		name := segName(s.dir, g.num, segData)
		if g.bad != nil || (g.f == nil && g != s.wseg()) {
			unread = append(unread, filepath.Base(name))
			continue
		}
		if g == s.wseg() {
			continue // this store's own: its entries are what it wrote
		}
		if err := s.rebuild(g); err != nil {
			return err
		}
		if g.size > g.end && !InUse(name) {
			if err := zero(name, g.end, g.size-g.end); err != nil {
				return err
			}
		}
	}
	for _, p := range s.idx.all(key, s.headKey) {
		l := s.loc(p)
		k, n, ok := s.head(p)
		if !ok || k != key || n < 0 || l.off+n > max(l.seg.size, l.seg.end) {
			continue // not its entry: every segment was read from its start
		}
		if err := zero(segName(s.dir, l.seg.num, segData), l.off, n); err != nil {
			return err
		}
	}
	if len(unread) > 0 {
		return fmt.Errorf("%s cannot be read, and may still hold the content", strings.Join(unread, ", "))
	}
	return nil
}

// wseg is the segment this store appends to, if any.
func (s *store) wseg() *segment {
	if s.w == nil {
		return nil
	}
	return s.w.seg
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
