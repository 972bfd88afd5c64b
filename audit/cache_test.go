package audit

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"bailiff/chain"
	"bailiff/engine"
)

// memStore is an evidence store in memory that counts its reads.
type memStore struct {
	m     map[string][]byte
	reads int
}

func (s *memStore) Put(data []byte, _ bool) (string, error) {
	d := chain.Digest(data)
	s.m[d] = data
	return d, nil
}

func (s *memStore) Get(d string) ([]byte, error) {
	s.reads++
	if b, ok := s.m[d]; ok {
		return b, nil
	}
	return nil, chain.ErrMissing
}

// TestTextsSharedNotMixed: caches of logs read together share one bound
// on the text they keep, however many logs there are; and one log's
// cache never answers for another's store, which may be missing what the
// first holds.
func TestTextsSharedNotMixed(t *testing.T) {
	texts := NewTexts()
	a, b := &memStore{m: map[string][]byte{}}, &memStore{m: map[string][]byte{}}
	ca, cb := NewSharedCache(a, texts), NewSharedCache(b, texts)
	d, _ := a.Put(engine.OutputJSON("only in a", nil, nil), false)
	if got, err := ca.Evidence(d); err != nil || got != "only in a" {
		t.Fatalf("a: %q, %v", got, err)
	}
	if _, err := ca.Evidence(d); err != nil || a.reads != 1 {
		t.Fatalf("a read its store %d times for one content (%v): the cache did not keep it", a.reads, err)
	}
	if got, err := cb.Evidence(d); !errors.Is(err, chain.ErrMissing) {
		t.Fatalf("b answered %q, %v for content its store does not hold", got, err)
	}
	// A hundred logs, each with more distinct text than the bound: what
	// is kept in all stays under it.
	for i := range 100 {
		s := &memStore{m: map[string][]byte{}}
		c := NewSharedCache(s, texts)
		for j := range 40 {
			d, _ := s.Put(engine.OutputJSON(fmt.Sprintf("%d %d %s", i, j, strings.Repeat("x", 4<<10)), nil, nil), false)
			if _, err := c.Evidence(d); err != nil {
				t.Fatal(err)
			}
			if texts.bytes > maxCachedText {
				t.Fatalf("%d bytes of text kept across logs, bound %d", texts.bytes, maxCachedText)
			}
		}
	}
}
