package audit

import (
	"os"
	"sync"

	"bailiff/engine"
)

// spillAfter is how much of one session's output text stays in memory
// before its full blocks move to the spill file: small sessions, the
// usual kind, never touch the disk.
const spillAfter = 1 << 20

// spillFile is the one temporary file every session of the process
// spills its taint index to, block by block (engine.BlockStore). Blocks
// of closed sessions are reused; when none is in use the file is removed,
// so nothing is left behind and a short run never creates one. It goes in
// os.TempDir ($TMPDIR): put that on a disk, not a RAM file system, for the
// memory bound to mean anything.
type spillFile struct {
	mu   sync.Mutex
	f    *os.File
	size int64   // bytes the file has
	free []int64 // blocks no session uses
	live int     // blocks in use
}

var spill = &spillFile{}

func (s *spillFile) Put(b []byte) (int64, error) {
	s.mu.Lock()
	if s.f == nil {
		f, err := os.CreateTemp("", "bailiff-spill-*")
		if err != nil {
			s.mu.Unlock()
			return 0, err
		}
		// Where the system allows it, the file has no name from the
		// start, so a crash leaves nothing behind either.
		os.Remove(f.Name())
		s.f, s.size, s.free = f, 0, nil
	}
	var off int64
	if n := len(s.free); n > 0 {
		off, s.free = s.free[n-1], s.free[:n-1]
	} else {
		off = s.size
		s.size += engine.BlockSize
	}
	s.live++
	f := s.f
	s.mu.Unlock()
	// WriteAt at distinct offsets is safe from several goroutines.
	if _, err := f.WriteAt(b, off); err != nil {
		s.Free(off)
		return 0, err
	}
	return off, nil
}

func (s *spillFile) Get(h int64, b []byte) error {
	s.mu.Lock()
	f := s.f
	s.mu.Unlock()
	_, err := f.ReadAt(b, h)
	return err
}

func (s *spillFile) Free(h int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free = append(s.free, h)
	s.live--
	if s.live == 0 {
		s.f.Close()
		os.Remove(s.f.Name())
		s.f = nil
	}
}
