package chain

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestAttackPutAfterFailedDirSyncIsNotDurable: a synced Put whose
// directory sync fails has already renamed the file into place and
// returns an error. The next synced Put of the same content finds the
// file by os.Stat and returns success without syncing the directory, so
// a caller is told the content is durable when its name was never synced
// (the same hole a concurrent Put of equal content has, between another
// Put's rename and its directory sync).
func TestAttackPutAfterFailedDirSyncIsNotDurable(t *testing.T) {
	e := Evidence{Dir: filepath.Join(t.TempDir(), "log.jsonl.evidence")}
	if _, err := e.Put([]byte("make the store"), true); err != nil {
		t.Fatal(err)
	}
	old := syncDir
	defer func() { syncDir = old }()
	calls, fail := 0, true
	syncDir = func(dir string) error {
		calls++
		if fail {
			return errors.New("injected EIO")
		}
		return old(dir)
	}
	if _, err := e.Put([]byte("output"), true); err == nil {
		t.Fatal("the first Put should report the failed directory sync")
	}
	fail = false
	before := calls
	if _, err := e.Put([]byte("output"), true); err != nil {
		t.Fatal(err)
	}
	if calls == before {
		t.Fatalf("a synced Put returned success for content whose directory entry was never synced (directory syncs: %d before, %d after)", before, calls)
	}
}
