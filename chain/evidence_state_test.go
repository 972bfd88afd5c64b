package chain

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestEvidenceStates: content a purge removed, content lost without one
// and content whose bytes changed are three different answers, in a store
// of packs and in one written before them.
func TestEvidenceStates(t *testing.T) {
	for _, packed := range []bool{true, false} {
		ev := OpenEvidence(filepath.Join(t.TempDir(), "log.evidence"))
		put := func(s string) string {
			if packed {
				d, err := ev.Put([]byte(s), false)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			return putFile(t, ev, []byte(s))
		}
		purged, edited := put(`{"text":"purged"}`), put(`{"text":"edited"}`)
		lost := Digest([]byte(`{"text":"lost"}`))
		if err := ev.Remove(purged); err != nil {
			t.Fatal(err)
		}
		alter(t, ev, edited)
		ev = OpenEvidence(ev.Dir) // as a later reader sees it

		if _, err := ev.Get(purged); !errors.Is(err, ErrPurged) {
			t.Errorf("packed %v: purged: %v, want ErrPurged", packed, err)
		}
		if _, err := ev.Get(lost); !errors.Is(err, ErrMissing) {
			t.Errorf("packed %v: lost: %v, want ErrMissing", packed, err)
		}
		var ee *EvidenceError
		if _, err := ev.Get(edited); !errors.As(err, &ee) {
			t.Errorf("packed %v: edited: %v, want an *EvidenceError", packed, err)
		}
		// A copy keeps the purge mark (the copy's content is purged,
		// not lost) and the alteration.
		dst := OpenEvidence(filepath.Join(t.TempDir(), "copy.evidence"))
		for _, d := range []string{purged, lost, edited} {
			if err := ev.CopyTo(dst, d); err != nil {
				t.Fatal(err)
			}
		}
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
		dst = OpenEvidence(dst.Dir)
		if _, err := dst.Get(purged); !errors.Is(err, ErrPurged) {
			t.Errorf("packed %v: copied purged: %v, want ErrPurged", packed, err)
		}
		if _, err := dst.Get(lost); !errors.Is(err, ErrMissing) {
			t.Errorf("packed %v: copied lost: %v, want ErrMissing", packed, err)
		}
		if _, err := dst.Get(edited); !errors.As(err, &ee) {
			t.Errorf("packed %v: copied edited: %v, want an *EvidenceError", packed, err)
		}
	}
}

// putFile stores data as a store written before packs did: one file per
// content, named by its hex digest.
func putFile(t *testing.T, e Evidence, data []byte) string {
	t.Helper()
	d := Digest(data)
	p, _ := e.path(d)
	if err := os.MkdirAll(e.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

// alter changes one byte of the content stored under d, wherever it is.
func alter(t *testing.T, e Evidence, d string) {
	t.Helper()
	p, _ := e.path(d)
	if data, err := os.ReadFile(p); err == nil {
		data[len(data)/2] ^= 1
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	key, _ := ParseDigest(d)
	s := newStore(e.Dir)
	l, ok, err := s.lookup(key, true)
	if !ok || err != nil || l.n == 0 {
		t.Fatalf("%s is not in the packs: %v", d, err)
	}
	f, err := os.OpenFile(segName(e.Dir, l.seg.num, segData), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	f.ReadAt(b, l.off+l.n/2)
	b[0] ^= 1
	if _, err := f.WriteAt(b, l.off+l.n/2); err != nil {
		t.Fatal(err)
	}
}
