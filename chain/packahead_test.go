package chain

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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

// TestReadEvidenceWindowsSeeTheDisk: where bytes change after a window took
// them in, the reader sees the disk. A writer whose write failed cuts its
// segment back and writes its next entry over the torn bytes: that entry
// is read, not the window's torn bytes. A purge wipes an entry: once the
// window is older than windowTTL, the entry is purged for the reader too.
func TestReadEvidenceWindowsSeeTheDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	w := OpenEvidence(dir)
	a := []byte("first output, read before the torn bytes")
	da, err := w.Put(a, false)
	if err != nil {
		t.Fatal(err)
	}
	data := segName(dir, 1, segData)
	st, err := os.Stat(data)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(data, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Repeat([]byte{0x5a}, 8040)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r := ReadEvidence(dir)
	if got, err := r.Get(da); err != nil || !bytes.Equal(got, a) {
		t.Fatalf("first entry: %q, %v", got, err)
	}
	if err := os.Truncate(data, st.Size()); err != nil {
		t.Fatal(err)
	}
	b := []byte("second output, written over the torn bytes")
	db, err := w.Put(b, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Get(db); err != nil || !bytes.Equal(got, b) {
		t.Fatalf("entry written over torn bytes a window held: %q, %v; want it read from the disk", got, err)
	}
	// Torn bytes that are the next entry's head and as many bytes of
	// something else: the window's copy does not hash, the disk's does.
	c := []byte("third output, whose failed write left its head and wrong bytes")
	key := sha256.Sum256(c)
	torn := append(key[:], binary.BigEndian.AppendUint64(nil, uint64(len(c)))...)
	torn = append(torn, bytes.Repeat([]byte{0}, len(c))...)
	st, err = os.Stat(data)
	if err != nil {
		t.Fatal(err)
	}
	if f, err = os.OpenFile(data, os.O_WRONLY|os.O_APPEND, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(torn); err != nil {
		t.Fatal(err)
	}
	f.Close()
	time.Sleep(2 * windowTTL) // the next read takes the torn bytes in
	if got, err := r.Get(db); err != nil || !bytes.Equal(got, b) {
		t.Fatalf("second entry again: %q, %v", got, err)
	}
	if err := os.Truncate(data, st.Size()); err != nil {
		t.Fatal(err)
	}
	dc, err := w.Put(c, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Get(dc); err != nil || !bytes.Equal(got, c) {
		t.Fatalf("entry written over its own torn head and wrong bytes: %q, %v; want it read from the disk", got, err)
	}

	var ds []string
	for i := range 200 { // far more than a window: entry 5 is not near the segment's end
		d, err := w.Put([]byte(fmt.Sprintf("output %d of a session later purged %s", i, strings.Repeat("x", 300))), false)
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r = ReadEvidence(dir)
	if _, err := r.Get(ds[0]); err != nil {
		t.Fatal(err)
	}
	if err := OpenEvidence(dir).Remove(ds[5]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * windowTTL)
	if _, err := r.Get(ds[5]); !errors.Is(err, ErrPurged) {
		t.Fatalf("an entry purged after the window took it in, read %v later: %v; want ErrPurged", 2*windowTTL, err)
	}
}
