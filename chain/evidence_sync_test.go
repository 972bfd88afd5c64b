package chain

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSyncedEvidenceSyncsItsName: the first synced Put syncs the
// directory once the segment is there under its name; without it a crash
// could keep the record naming the content and lose the segment. An
// unsynced Put syncs nothing, and a later synced Put no directory again.
func TestSyncedEvidenceSyncsItsName(t *testing.T) {
	e := OpenEvidence(filepath.Join(t.TempDir(), "log.jsonl.evidence"))
	var synced []bool
	old := syncDir
	syncDir = func(dir string) error {
		if dir == e.Dir {
			_, err := os.Stat(segName(e.Dir, 1, segData))
			synced = append(synced, err == nil)
		}
		return old(dir)
	}
	defer func() { syncDir = old }()
	if _, err := e.Put([]byte("unsynced"), false); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 0 {
		t.Fatalf("an unsynced Put synced the directory")
	}
	if _, err := e.Put([]byte("synced"), true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Put([]byte("synced 2"), true); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || !synced[0] {
		t.Fatalf("two synced Puts synced the directory %d times (with the segment there: %v), want once", len(synced), synced)
	}
}

// TestNewStoreSyncsItsParent: the first synced Put, which makes the store,
// syncs the directory the store's own name is in, then the store.
func TestNewStoreSyncsItsParent(t *testing.T) {
	parent := t.TempDir()
	e := OpenEvidence(filepath.Join(parent, "log.jsonl.evidence"))
	var dirs []string
	old := syncDir
	syncDir = func(dir string) error { dirs = append(dirs, dir); return old(dir) }
	defer func() { syncDir = old }()
	if _, err := e.Put([]byte("first"), true); err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 2 || dirs[0] != parent || dirs[1] != e.Dir {
		t.Fatalf("synced %q, want the parent then the store", dirs)
	}
}
