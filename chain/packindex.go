package chain

import (
	"crypto/sha256"
	"encoding/binary"
)

// entries is a store's index in memory: where the latest entry of each
// content is. It is kept for a whole verify, so it is small and holds no
// pointers (the collector never scans it): a content is found by its
// digest's first 8 bytes, to one word of place, and the head every read
// checks says whether the entry found is that content's (127,221 entries:
// 4.7 MB, against 16.8 MB as whole digests to a place with a pointer). A digest whose first 8 bytes another
// digest took first is kept whole, apart; a server that crafts outputs to
// collide there (2^32 work) costs a little memory, never a wrong answer.
type entries struct {
	first map[uint64]place
	other map[[sha256.Size]byte]place
	dups  map[[sha256.Size]byte][]place // earlier entries of a content
}

// place is where one entry's bytes begin, in one word: the offset in its
// segment (40 bits) and the segment's index in store.segs (24 bits). Its
// length is read from the entry's head, read with the bytes.
type place uint64

const (
	placeSegBits = 24
	maxPlaceOff  = int64(1) << (64 - placeSegBits) // no entry is read past this
	maxSegs      = 1 << placeSegBits
)

func mkplace(seg int32, off int64) place { return place(uint64(off)<<placeSegBits | uint64(seg)) }

func (p place) seg() int32 { return int32(p & (maxSegs - 1)) }

func (p place) off() int64 { return int64(p >> placeSegBits) }

func newEntries() entries {
	return entries{first: map[uint64]place{}, other: map[[sha256.Size]byte]place{},
		dups: map[[sha256.Size]byte][]place{}}
}

func prefix(key [sha256.Size]byte) uint64 { return binary.BigEndian.Uint64(key[:8]) }

// reserve sizes an empty index for n entries, so loading a large store
// does not grow (and copy) the map a step at a time.
func (x *entries) reserve(n int64) {
	if len(x.first) == 0 && n > 0 {
		x.first = make(map[uint64]place, min(n, 1<<24))
	}
}

// add records p as key's latest entry. head reads the digest an entry's
// head names; it is called only when the first 8 bytes are taken already.
func (x *entries) add(key [sha256.Size]byte, p place, head func(place) ([sha256.Size]byte, bool)) {
	if old, ok := x.other[key]; ok {
		x.dups[key] = append(x.dups[key], old)
		x.other[key] = p
		return
	}
	k := prefix(key)
	old, ok := x.first[k]
	if !ok {
		x.first[k] = p
		return
	}
	if h, ok := head(old); ok && h == key {
		x.dups[key] = append(x.dups[key], old)
		x.first[k] = p
		return
	}
	x.other[key] = p
}

// find returns the place key's entry is, if the index has one: the head
// there must still be checked to be key's.
func (x *entries) find(key [sha256.Size]byte) (place, bool) {
	if p, ok := x.other[key]; ok {
		return p, true
	}
	p, ok := x.first[prefix(key)]
	return p, ok
}

// all returns every entry the index holds for key, the latest last.
func (x *entries) all(key [sha256.Size]byte, head func(place) ([sha256.Size]byte, bool)) []place {
	ps := append([]place{}, x.dups[key]...)
	if p, ok := x.other[key]; ok {
		return append(ps, p)
	}
	if p, ok := x.first[prefix(key)]; ok {
		if h, ok := head(p); ok && h == key {
			ps = append(ps, p)
		}
	}
	return ps
}

// drop forgets every entry of segment seg.
func (x *entries) drop(seg int32) {
	for k, p := range x.first {
		if p.seg() == seg {
			delete(x.first, k)
		}
	}
	for k, p := range x.other {
		if p.seg() == seg {
			delete(x.other, k)
		}
	}
	for k, ps := range x.dups {
		kept := ps[:0]
		for _, p := range ps {
			if p.seg() != seg {
				kept = append(kept, p)
			}
		}
		x.dups[k] = kept
	}
}

// latest returns the place of every content's latest entry.
func (x *entries) latest() []place {
	out := make([]place, 0, len(x.first)+len(x.other))
	for _, p := range x.first {
		out = append(out, p)
	}
	for _, p := range x.other {
		out = append(out, p)
	}
	return out
}
