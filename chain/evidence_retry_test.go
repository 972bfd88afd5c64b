package chain

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestAttackPutAfterFailedSyncIsNotDurable: a synced Put whose sync
// fails has already written its entry and returns an error. The next
// synced Put of the same content must not find the entry and return
// success without a sync that worked (after a failed fsync, a second one
// of the same file can succeed with the pages gone): it writes the
// content again, to a new segment, and syncs that.
func TestAttackPutAfterFailedSyncIsNotDurable(t *testing.T) {
	e := OpenEvidence(filepath.Join(t.TempDir(), "log.jsonl.evidence"))
	if _, err := e.Put([]byte("make the store"), true); err != nil {
		t.Fatal(err)
	}
	old := syncFile
	defer func() { syncFile = old }()
	var synced []*os.File
	fail := true
	syncFile = func(f *os.File) error {
		synced = append(synced, f)
		if fail {
			return errors.New("injected EIO")
		}
		return old(f)
	}
	if _, err := e.Put([]byte("output"), true); err == nil {
		t.Fatal("the first Put should report the failed sync")
	}
	fail = false
	if _, err := e.Put([]byte("output"), true); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 2 || synced[0] == synced[1] {
		t.Fatalf("after a failed sync, the same content was put again with %d syncs (want one more, of a new segment)", len(synced)-1)
	}
	if got, err := OpenEvidence(e.Dir).Get(Digest([]byte("output"))); err != nil || string(got) != "output" {
		t.Fatalf("Get = %q, %v", got, err)
	}
}
