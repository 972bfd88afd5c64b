package chain

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"
)

// slowDisk is a log file whose sync takes a while and says how many
// records it carried: those written when it started.
type slowDisk struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	records int64 // written
	synced  int64 // on disk
	syncs   int
	fail    bool
}

func (d *slowDisk) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.records += int64(bytes.Count(p, []byte{'\n'}))
	return d.buf.Write(p)
}

func (d *slowDisk) Sync() error {
	d.mu.Lock()
	carried := d.records
	d.syncs++
	fail := d.fail
	d.mu.Unlock()
	time.Sleep(10 * time.Millisecond)
	if fail {
		return errors.New("injected EIO")
	}
	d.mu.Lock()
	d.synced = max(d.synced, carried)
	d.mu.Unlock()
	return nil
}

// TestWriterGroupCommit: appends that wait while a sync runs share the
// next one, and each returns only once a sync that began after its
// record was written has finished: group commit, with nothing returned
// early.
func TestWriterGroupCommit(t *testing.T) {
	d := &slowDisk{}
	w := NewWriter(d, Sync)
	const n = 64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			rec, err := w.Append(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "s", KindCall, nil)
			if err != nil {
				t.Error(err)
				return
			}
			d.mu.Lock()
			synced := d.synced
			d.mu.Unlock()
			if synced < rec.Seq+1 {
				t.Errorf("record %d returned with %d records on disk", rec.Seq, synced)
			}
		}()
	}
	close(start)
	wg.Wait()
	if d.syncs == 0 || d.syncs > n/4 {
		t.Errorf("%d appends at once took %d syncs, want them shared", n, d.syncs)
	}
	// A lazy record is carried by the next sync, and one with nothing
	// new to carry costs none.
	before := d.syncs
	w.AppendLazy(time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC), "s", KindResult, nil)
	if d.syncs != before {
		t.Errorf("a lazy record was synced by itself")
	}
	if err := w.Sync(); err != nil || d.synced != n+1 {
		t.Errorf("Sync = %v with %d of %d records on disk", err, d.synced, n+1)
	}
	if err := w.Sync(); err != nil || d.syncs != before+1 {
		t.Errorf("a Sync with nothing new took %d syncs", d.syncs-before-1)
	}
}

// TestWriterFailedSyncFailsEveryAppend: after a failed sync no append
// is taken, and none waiting on it returns success.
func TestWriterFailedSyncFailsEveryAppend(t *testing.T) {
	d := &slowDisk{fail: true}
	w := NewWriter(d, Sync)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := w.Append(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "s", KindCall, nil); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	d.fail = false
	if _, err := w.Append(time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC), "s", KindCall, nil); err == nil || ok > 0 {
		t.Fatalf("after a failed sync: %d appends returned success, and a later one %v", ok, err)
	}
}
