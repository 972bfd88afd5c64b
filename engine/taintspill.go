package engine

import "sync"

// BlockSize is the size of the blocks a BlockStore holds.
const BlockSize = blockSize

// BlockStore keeps blocks of a session's normalized output outside the
// engine's memory. The engine does no I/O: a caller whose sessions can
// outgrow memory passes one to State.SpillTo (replay spills to a
// temporary file). Blocks are BlockSize bytes; a session's blocks are
// written once, read any number of times, and freed when it closes.
type BlockStore interface {
	// Put stores a copy of block and returns a handle to read it by.
	Put(block []byte) (int64, error)
	// Get reads the block stored under h into b.
	Get(h int64, b []byte) error
	// Free says the block under h is not needed any more.
	Free(h int64)
}

// spill moves every full block of buf to the store. A block the store
// refuses stays in memory: nothing is lost, and the error is reported.
func (ix *taintIndex) spill() {
	n := 0
	for n+blockSize <= len(ix.buf) && ix.err == nil {
		h, err := ix.store.Put(ix.buf[n : n+blockSize])
		if err != nil {
			ix.err = err
			break
		}
		k := len(ix.spilled)
		ix.spilled = append(ix.spilled, h)
		n += blockSize
		// Fold the block's filter into its group's. The last two
		// trigrams that start in the block may come with the next
		// output: grams then sets them in the group's filter.
		for k/superBlocks >= len(ix.groups) {
			ix.groups = append(ix.groups, new(trigramFilter))
		}
		g := ix.groups[k/superBlocks]
		for w, bits := range ix.filters[k] {
			g[w] |= bits
		}
		ix.filters[k] = nil
	}
	ix.base += n
	ix.buf = ix.buf[:copy(ix.buf, ix.buf[n:])]
}

// release frees the blocks in the store; the index is not used after.
func (ix *taintIndex) release() {
	if ix.store != nil {
		for _, h := range ix.spilled {
			ix.store.Free(h)
		}
	}
	ix.spilled = nil
	// The text goes back for another session to fill: a replay opens
	// session after session, and each grew its text from nothing. The
	// index lets go of it, so a second release gives nothing back twice.
	if c := cap(ix.buf); c > 0 && c <= maxPooledText {
		b := ix.buf[:0]
		textPool.Put(&b)
	}
	ix.buf = nil
}

// textPool holds the text buffers of closed sessions (*[]byte), up to
// maxPooledText each: a larger one would be held for a session that may
// never need it.
var textPool sync.Pool

const maxPooledText = 4 << 20

// pooledText is an empty buffer for the index's text, reused when there
// is one no larger than a spilling index would grow its own.
func (ix *taintIndex) pooledText() []byte {
	p, ok := textPool.Get().(*[]byte)
	if !ok || (ix.store != nil && cap(*p) > 2*ix.spillAfter) {
		return nil
	}
	return (*p)[:0]
}

// text returns the text from lo to hi, reading spilled blocks back. lo is
// the start of a block and hi-lo less than two blocks; the result is valid
// until the next call. Scanning block after block reads each block once:
// the second block of one window is the first of the next.
func (ix *taintIndex) text(lo, hi int) []byte {
	if lo >= ix.base {
		return ix.buf[lo-ix.base : hi-ix.base]
	}
	if ix.scratch == nil {
		ix.scratch, ix.have = make([]byte, 2*blockSize), -1
	}
	k := lo >> blockShift
	first, second := ix.scratch[:blockSize], ix.scratch[blockSize:]
	if ix.have == k {
		copy(first, second)
	} else if !ix.get(k, first) {
		return nil
	}
	ix.have = -1
	if n := hi - lo - blockSize; n > 0 {
		if next := lo + blockSize; next >= ix.base {
			copy(second, ix.buf[next-ix.base:next-ix.base+n])
		} else {
			if !ix.get(k+1, second) {
				return nil
			}
			ix.have = k + 1
		}
	}
	return ix.scratch[:hi-lo]
}

// get reads spilled block k into b.
func (ix *taintIndex) get(k int, b []byte) bool {
	if err := ix.store.Get(ix.spilled[k], b); err != nil {
		ix.err = err
		return false
	}
	return true
}
