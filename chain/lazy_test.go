package chain

import (
	"bytes"
	"testing"
)

// syncLog is a file that counts its fsyncs and what they covered.
type syncLog struct {
	bytes.Buffer
	syncs  int
	synced int // bytes on disk after the last sync
}

func (s *syncLog) Sync() error {
	s.syncs++
	s.synced = s.Len()
	return nil
}

// TestLazyRecordsRideTheNextSync: with Sync durability a lazy record is
// not fsynced by itself, and the next durable record's fsync covers it,
// so no durable record ever follows one that is not on disk.
func TestLazyRecordsRideTheNextSync(t *testing.T) {
	f := &syncLog{}
	w := NewWriter(f, Sync)
	if _, err := w.Append(t0, "s", KindCall, &testEnd{}); err != nil {
		t.Fatal(err)
	}
	if f.syncs != 1 || f.synced != f.Len() {
		t.Fatalf("a durable record: %d syncs, %d of %d bytes synced", f.syncs, f.synced, f.Len())
	}
	for range 3 {
		if _, err := w.AppendLazy(t0, "s", KindResult, &testEnd{}); err != nil {
			t.Fatal(err)
		}
	}
	if f.syncs != 1 {
		t.Errorf("lazy records were synced on their own: %d syncs", f.syncs)
	}
	if _, err := w.Append(t0, "s", KindCall, &testEnd{}); err != nil {
		t.Fatal(err)
	}
	if f.syncs != 2 || f.synced != f.Len() {
		t.Errorf("the next durable record: %d syncs, %d of %d bytes synced", f.syncs, f.synced, f.Len())
	}
	if _, err := w.AppendLazy(t0, "s", KindResult, &testEnd{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil || f.synced != f.Len() {
		t.Errorf("close left %d of %d bytes unsynced (%v)", f.Len()-f.synced, f.Len(), err)
	}
}
