package engine

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// naiveFind is the definition find must agree with: the first output
// whose normalized text contains s.
func naiveFind(texts []string, s string) int {
	for i, t := range texts {
		if strings.Contains(Normalize(t), s) {
			return i
		}
	}
	return -1
}

func checkFind(t *testing.T, texts []string, needle string) {
	t.Helper()
	var ix taintIndex
	for i, x := range texts {
		ix.add(Source{Pos: i}, x)
	}
	want := naiveFind(texts, needle)
	src, ok := ix.find(needle)
	got := -1
	if ok {
		got = src.Pos
	}
	if got != want {
		t.Fatalf("find(%q) = %d, want %d (texts of %d bytes)", needle, got, want, len(ix.buf))
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
