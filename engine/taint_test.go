package engine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// naiveFind is the definition find must agree with: the first output
// whose normalized text contains s.
func naiveFind(texts []string, s string) int {
	for i, t := range texts {
		if naiveHolds(t, s) {
			return i
		}
	}
	return -1
}

// naiveHolds tells whether output t holds s: its normalized text, or one
// of its decoded forms, as a reader decodes it.
func naiveHolds(t, s string) bool {
	n := Normalize(t)
	found := strings.Contains(n, s)
	outputForms(t, func(x string) {
		found = found || strings.Contains(Normalize(x), s)
	})
	return found
}

// naiveAll is every output holding s, as findEach must report them.
func naiveAll(texts []string, s string) []int {
	var all []int
	for i, t := range texts {
		if naiveHolds(t, s) {
			all = append(all, i)
		}
	}
	return all
}

// memStore is a BlockStore in memory that counts what it holds, for
// tests: the index must give the same answers whether its text is in
// memory or spilled.
type memStore struct {
	blocks map[int64][]byte
	next   int64
	reads  int
	fail   bool // Get fails
}

func (m *memStore) Put(b []byte) (int64, error) {
	if len(b) != BlockSize {
		panic("a block of the wrong size")
	}
	if m.blocks == nil {
		m.blocks = map[int64][]byte{}
	}
	m.next++
	m.blocks[m.next] = bytes.Clone(b)
	return m.next, nil
}

func (m *memStore) Get(h int64, b []byte) error {
	m.reads++
	if m.fail {
		return errors.New("injected read failure")
	}
	blk, ok := m.blocks[h]
	if !ok {
		panic("a block that was freed or never stored")
	}
	copy(b, blk)
	return nil
}

func (m *memStore) Free(h int64) { delete(m.blocks, h) }

// spillings are the ways an index is tried: text in memory, every full
// block spilled at once, and spilling only beyond a threshold that is not
// a multiple of the block size, so the boundary between spilled and held
// text moves.
var spillings = []struct {
	name  string
	after int
}{{"memory", -1}, {"spill-all", 0}, {"spill-after", BlockSize + 4099}}

func checkFind(t *testing.T, texts []string, needle string) {
	t.Helper()
	want := naiveFind(texts, needle)
	for _, sp := range spillings {
		var ix taintIndex
		st := &memStore{}
		if sp.after >= 0 {
			ix.store, ix.spillAfter = st, sp.after
		}
		for i, x := range texts {
			ix.add(Source{Pos: i}, x)
		}
		src, ok := ix.find(needle)
		got := -1
		if ok {
			got = src.Pos
		}
		if got != want || ix.err != nil {
			t.Fatalf("%s: find(%q) = %d, want %d (texts of %d bytes, %d spilled; err %v)", sp.name, needle, got, want, ix.size, ix.base, ix.err)
		}
		// findEach reports every output holding the needle, in order.
		var each []int
		ix.findEach(needle, func(src Source) bool {
			if len(each) == 0 || each[len(each)-1] != src.Pos {
				each = append(each, src.Pos)
			}
			return true
		})
		if all := naiveAll(texts, needle); !slices.Equal(each, all) {
			t.Fatalf("%s: findEach(%q) = %v, want %v", sp.name, needle, each, all)
		}
		ix.release()
		if len(st.blocks) != 0 {
			t.Fatalf("%s: %d blocks not freed", sp.name, len(st.blocks))
		}
	}
}

// TestFindAcrossBlocks plants needles across the 64 KiB block boundaries
// of the trigram filter and at text boundaries, where a match must not
// join two outputs.
func TestFindAcrossBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	filler := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcdefgh ij"[r.IntN(11)]
		}
		return string(b)
	}
	big := filler(3*blockSize + 1000)
	for _, off := range []int{0, blockSize - 7, blockSize - 1, blockSize, 2*blockSize - 3, len(big) - 12} {
		text := big[:off] + "zq-needle-zq" + big[off:]
		checkFind(t, []string{filler(100), text}, "zq-needle-zq")
	}
	// Two outputs whose junction spells the needle: no match.
	checkFind(t, []string{filler(blockSize-5) + "zq-nee", "dle-zq" + filler(10)}, "zq-needle-zq")
	checkFind(t, []string{filler(50), filler(50)}, "zq-needle-zq")
	// Short needles bypass the filter.
	checkFind(t, []string{"ab", "xyz"}, "yz")
	// Normalization happens before matching.
	checkFind(t, []string{filler(blockSize), "Drop   BOX\tTeam"}, "drop box team")
}

// FuzzFind compares the filtered search with the naive one.
func FuzzFind(f *testing.F) {
	f.Add("hello world", "goodbye world", "o w", 0)
	f.Add("ＡＢＣＤＥＦ", "", "abcdef", 70000)
	f.Fuzz(func(t *testing.T, a, b, needle string, pad int) {
		pad = pad % (3 * blockSize)
		if pad < 0 {
			pad = -pad
		}
		needle = Normalize(needle)
		if needle == "" {
			return
		}
		checkFind(t, []string{strings.Repeat("x ", pad/2) + a, b}, needle)
	})
}

// TestFindSpilled checks the spilled index against the in-memory one on
// needles at every kind of boundary: a block's, the spill's (where held
// text begins), and longer than a block, with many outputs.
func TestFindSpilled(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	word := func() string { return []string{"alpha", "beta", "gamma", "delta", "eps", "zeta"}[r.IntN(6)] }
	var texts []string
	for len(texts) < 40 {
		var b strings.Builder
		for n := r.IntN(BlockSize / 2); b.Len() < n; {
			b.WriteString(word())
			b.WriteByte(' ')
		}
		texts = append(texts, b.String())
	}
	all := strings.Join(texts, "\x00")
	// Needles cut from the text at and around each block boundary, and
	// around the positions where spill-after leaves held text.
	var needles []string
	for k := BlockSize; k < len(all)-40; k += BlockSize {
		for _, d := range []int{-20, -7, -1, 0, 1} {
			needles = append(needles, all[k+d:k+d+17])
		}
	}
	needles = append(needles, all[len(all)-30:], "zq-absent-zq", all[BlockSize-100:2*BlockSize+100])
	for _, n := range needles {
		if n = Normalize(n); n != "" {
			checkFind(t, texts, n)
		}
	}
	// A needle planted across the boundary of two blocks that are both
	// spilled, one across a spill boundary, one longer than a block.
	long := strings.Repeat("q", BlockSize+10) + "zz"
	for _, off := range []int{BlockSize - 5, 2*BlockSize - 3, 3*BlockSize + 4099 - 6} {
		text := all[:off] + "xx-planted-needle-xx" + all[off:]
		checkFind(t, []string{text}, "xx-planted-needle-xx")
		checkFind(t, []string{text[:off] + long + text[off:]}, long)
	}
}

// TestSpillReadsOnlyCandidates: a search for a string the filters rule
// out reads no block back, and one that is there reads few.
func TestSpillReadsOnlyCandidates(t *testing.T) {
	var ix taintIndex
	st := &memStore{}
	ix.store = st
	text := strings.Repeat("the quarterly numbers are attached ", 30000)
	ix.add(Source{Pos: 1}, text)
	ix.add(Source{Pos: 2}, "mail bob at drop-box-team now")
	if ix.base == 0 {
		t.Fatal("nothing was spilled")
	}
	if _, ok := ix.find("zzz-not-there"); ok || st.reads != 0 {
		t.Fatalf("a filtered-out search read %d blocks", st.reads)
	}
	if src, ok := ix.find("drop-box-team"); !ok || src.Pos != 2 || st.reads > 2 {
		t.Fatalf("find = %v %v after %d reads", src, ok, st.reads)
	}
}

// TestSpillError: a block the store cannot give back is an error of the
// state, never a silent miss.
func TestSpillError(t *testing.T) {
	p := mustLoad(t, "version: 1\nrules: [{id: a, tool: \"*\", action: allow}]\n")
	s := NewState("s", "srv", Principal{}, nil)
	st := &memStore{fail: true}
	s.SpillTo(st, 0)
	s.AddOutput(p, Source{Pos: 1, ToolRef: ToolRef{Tool: "read"}}, strings.Repeat("x", 3*BlockSize)+" drop-box-team")
	if _, ok := s.index().find("xxxxxxxx"); ok {
		t.Fatal("found text the store could not read")
	}
	if s.Err() == nil {
		t.Fatal("no error after a failed read")
	}
}

// TestSpillBoundsBuffer: one output far larger than the threshold does
// not leave the held text (or its capacity) as large as itself.
func TestSpillBoundsBuffer(t *testing.T) {
	var ix taintIndex
	ix.store, ix.spillAfter = &memStore{}, 1<<20
	ix.add(Source{Pos: 1}, strings.Repeat("abcdefgh ", 8<<20/9))
	if c := cap(ix.buf); c > 2*ix.spillAfter { // append grows by a quarter or so at this size
		t.Fatalf("held text has a capacity of %d bytes after an 8 MiB output, threshold %d", c, ix.spillAfter)
	}
	if src, ok := ix.find("gh abcdefgh abc"); !ok || src.Pos != 1 {
		t.Fatalf("find = %v %v", src, ok)
	}
}
