package chain

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSyncedEvidenceSyncsItsName: a synced Put syncs the directory after
// the rename, when the file is there under its name; without it a crash
// could keep the record naming the content and lose the file. An unsynced
// Put syncs nothing.
func TestSyncedEvidenceSyncsItsName(t *testing.T) {
	e := Evidence{Dir: filepath.Join(t.TempDir(), "log.jsonl.evidence")}
	if _, err := e.Put([]byte("unsynced"), false); err != nil {
		t.Fatal(err)
	}
	var synced []bool
	old := syncDir
	syncDir = func(dir string) error {
		if dir != e.Dir {
			t.Errorf("synced %s, want %s", dir, e.Dir)
		}
		entries, _ := os.ReadDir(dir)
		named := false
		for _, f := range entries {
			named = named || f.Name() == Digest([]byte("synced"))[len("sha256:"):]
		}
		synced = append(synced, named)
		return old(dir)
	}
	defer func() { syncDir = old }()
	if _, err := e.Put([]byte("unsynced 2"), false); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 0 {
		t.Fatalf("an unsynced Put synced the directory")
	}
	if _, err := e.Put([]byte("synced"), true); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || !synced[0] {
		t.Fatalf("a synced Put synced the directory %d times, after the rename: %v", len(synced), synced)
	}
}

// TestNewStoreSyncsItsParent: the first synced Put, which makes the store,
// syncs the directory the store's own name is in.
func TestNewStoreSyncsItsParent(t *testing.T) {
	parent := t.TempDir()
	e := Evidence{Dir: filepath.Join(parent, "log.jsonl.evidence")}
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
