package chain

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestReadEvidenceWindows: a store opened to be read gives every entry
// back as the plain store does, in order, from two places far apart at
// once (as two workers read), with entries larger than a window, and with
// entries appended after a window was read; and in order it reads the
// disk once per window, not once per entry.
func TestReadEvidenceWindows(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	w := OpenEvidence(dir)
	var digests []string
	var contents [][]byte
	put := func(b []byte) {
		d, err := w.Put(b, false)
		if err != nil {
			t.Fatal(err)
		}
		digests, contents = append(digests, d), append(contents, b)
	}
	for i := range 600 {
		size := 200 + i%7*150
		if i%97 == 0 {
			size = 3 * windowSize // read alone
		}
		put([]byte(fmt.Sprintf("%d:%s", i, strings.Repeat(string(rune('a'+i%26)), size))))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	check := func(r Evidence, i int) {
		t.Helper()
		got, err := r.Get(digests[i])
		if err != nil || !bytes.Equal(got, contents[i]) {
			t.Fatalf("entry %d: %d bytes, %v; want its %d bytes", i, len(got), err, len(contents[i]))
		}
	}

	r := ReadEvidence(dir)
	for i := range digests {
		check(r, i)
	}
	if n := r.s.win.reads; n > len(digests)/5 {
		t.Errorf("in order, %d entries took %d reads of the disk", len(digests), n)
	}

	r = ReadEvidence(dir)
	for i := range 300 {
		check(r, i)
		check(r, 300+i)
	}
	if n := r.s.win.reads; n > len(digests)/5 {
		t.Errorf("two places at once, %d entries took %d reads of the disk: the windows take each other's", len(digests), n)
	}

	r = ReadEvidence(dir)
	var wg sync.WaitGroup
	for k := range 2 {
		wg.Go(func() {
			for i := k; i < len(digests); i += 2 {
				got, err := r.Get(digests[i])
				if err != nil || !bytes.Equal(got, contents[i]) {
					t.Errorf("entry %d read alongside another reader: %v", i, err)
				}
			}
		})
	}
	wg.Wait()

	// A log still being written: what is appended after a window was
	// read, near its end, is read from the disk, not from the window.
	r = ReadEvidence(dir)
	check(r, len(digests)-1)
	w = OpenEvidence(dir)
	for i := range 20 {
		put([]byte(fmt.Sprintf("late %d", i)))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for i := len(digests) - 20; i < len(digests); i++ {
		check(r, i)
	}
}
