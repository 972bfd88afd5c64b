package audit

import (
	"bytes"
	"sync"
	"testing"

	"bailiff/engine"
)

// TestSpillFile: blocks come back as written from several goroutines at
// once, freed space is reused, and the file goes when no block is in use.
func TestSpillFile(t *testing.T) {
	s := &spillFile{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var hs []int64
			for i := range 8 {
				b := bytes.Repeat([]byte{byte(g*16 + i)}, engine.BlockSize)
				h, err := s.Put(b)
				if err != nil {
					t.Error(err)
					return
				}
				hs = append(hs, h)
			}
			got := make([]byte, engine.BlockSize)
			for i, h := range hs {
				if err := s.Get(h, got); err != nil || !bytes.Equal(got, bytes.Repeat([]byte{byte(g*16 + i)}, engine.BlockSize)) {
					t.Errorf("goroutine %d block %d: %v", g, i, err)
				}
				s.Free(h)
			}
		}()
	}
	wg.Wait()
	if s.f != nil || s.live != 0 {
		t.Fatalf("the file is still open with %d blocks in use", s.live)
	}
	// Freed space is reused while the file lives.
	a, _ := s.Put(make([]byte, engine.BlockSize))
	b, _ := s.Put(make([]byte, engine.BlockSize))
	s.Free(b)
	c, _ := s.Put(make([]byte, engine.BlockSize))
	if c != b || s.size != 2*engine.BlockSize {
		t.Fatalf("a freed block was not reused: %d, %d, %d (file of %d bytes)", a, b, c, s.size)
	}
	s.Free(a)
	s.Free(c)
}
