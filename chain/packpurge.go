package chain

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// wipe overwrites the bytes of every entry of key with zeroes (punching a
// hole where the filesystem can, so the space is freed too) and syncs: a
// purged content's bytes are gone from the store, its entry's head stays.
// No index is trusted for it: every segment is read from its start.
// Bytes that read as no entry (a gap after damage, or the tail of a
// segment no writer holds: a torn write) may hold the content too: such
// a region is zeroed when it begins with a head naming key (a torn or
// damaged copy of it), and where data, the content's bytes when they are
// known, occur in it; when they are not known, the purge fails naming the
// region, and zeroes none of it (it may be another content's). A segment
// that cannot be read at all fails the purge, after the rest.
func (s *store) wipe(key [sha256.Size]byte, data []byte) error {
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
		regions := append([]gap{}, g.gaps...)
		if g.size > g.end && !InUse(name) {
			regions = append(regions, gap{g.end, g.size})
		}
		for _, r := range regions {
			if err := s.wipeRegion(g, r, key, data); err != nil {
				unread = append(unread, err.Error())
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
		return fmt.Errorf("%s cannot be read, and may still hold the content", strings.Join(unread, "; "))
	}
	return nil
}

// wipeRegion zeroes what of r in g may be key's content (see wipe).
func (s *store) wipeRegion(g *segment, r gap, key [sha256.Size]byte, data []byte) error {
	name := segName(s.dir, g.num, segData)
	buf := make([]byte, r.to-r.from)
	if _, err := g.f.ReadAt(buf, r.from); err != nil {
		return err
	}
	if bytes.HasPrefix(buf, key[:]) {
		return zero(name, r.from, r.to-r.from)
	}
	if data == nil {
		return fmt.Errorf("%s (%d bytes at offset %d read as no entry)", filepath.Base(name), r.to-r.from, r.from)
	}
	for i := 0; len(data) > 0; {
		j := bytes.Index(buf[i:], data)
		if j < 0 {
			break
		}
		if err := zero(name, r.from+int64(i+j), int64(len(data))); err != nil {
			return err
		}
		i += j + len(data)
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
