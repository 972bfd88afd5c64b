package chain

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestEvidenceStates: content a purge removed, content lost without one
// and content whose bytes changed are three different answers.
func TestEvidenceStates(t *testing.T) {
	ev := Evidence{Dir: filepath.Join(t.TempDir(), "log.evidence")}
	purged, _ := ev.Put([]byte(`{"text":"purged"}`), false)
	lost, _ := ev.Put([]byte(`{"text":"lost"}`), false)
	edited, _ := ev.Put([]byte(`{"text":"edited"}`), false)
	if err := ev.Remove(purged); err != nil {
		t.Fatal(err)
	}
	p, _ := ev.path(lost)
	os.Remove(p)
	p, _ = ev.path(edited)
	os.WriteFile(p, []byte(`{"text":"edited!"}`), 0o600)

	if _, err := ev.Get(purged); !errors.Is(err, ErrPurged) {
		t.Errorf("purged: %v, want ErrPurged", err)
	}
	if _, err := ev.Get(lost); !errors.Is(err, ErrMissing) {
		t.Errorf("lost: %v, want ErrMissing", err)
	}
	var ee *EvidenceError
	if _, err := ev.Get(edited); !errors.As(err, &ee) {
		t.Errorf("edited: %v, want an *EvidenceError", err)
	}
	// A copy keeps the purge mark: the copy's content is purged, not lost.
	dst := Evidence{Dir: filepath.Join(t.TempDir(), "copy.evidence")}
	for _, d := range []string{purged, lost} {
		if err := ev.CopyTo(dst, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dst.Get(purged); !errors.Is(err, ErrPurged) {
		t.Errorf("copied purged: %v, want ErrPurged", err)
	}
	if _, err := dst.Get(lost); !errors.Is(err, ErrMissing) {
		t.Errorf("copied lost: %v, want ErrMissing", err)
	}
}
