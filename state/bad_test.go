package state_test

import (
	"bytes"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"bailiff/internal/fault"
	"bailiff/state"
)

// refusedUnchanged opens path, wants an error matching want (a sentinel,
// or nil for any) whose text holds every of says, and checks the file is
// byte for byte what it was: a refused database is never repaired,
// recreated or migrated.
func refusedUnchanged(t *testing.T, path string, want error, says ...string) {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := state.Open(path)
	if err == nil {
		s.Close()
		t.Fatalf("%s was opened", path)
	}
	t.Logf("refused: %v", err)
	if want != nil && !errors.Is(err, want) {
		t.Fatalf("error %v is not %v", err, want)
	}
	for _, w := range append(says, path) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatalf("refusing %s changed it", path)
	}
}

func TestNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, []byte("{\"pending\": []}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	refusedUnchanged(t, path, state.ErrCorrupt, "not an SQLite database", "move it aside")
}

// TestCorruptPages: a database whose pages were overwritten (a torn disk,
// an editor) is refused at open, not used until a query trips on it.
func TestCorruptPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	for i := range 50 {
		if err := s.AddAsk(ask(strings.Repeat("x", i+1))); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 3*4096 {
		t.Fatalf("database is only %d bytes", len(b))
	}
	for i := 4096 + 100; i < 3*4096; i++ {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	refusedUnchanged(t, path, state.ErrCorrupt, "move it aside")
}

func TestNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	if err := s.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	refusedUnchanged(t, path, state.ErrNewer, "schema version 99", "never migrated down")
}

// TestAnotherProgramsDatabase: an SQLite file that is not bailiff's (in
// the rollback journal mode other programs default to) is refused, not
// given bailiff's tables, nor switched to WAL: not a byte of it changes.
func TestAnotherProgramsDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA journal_mode = DELETE; CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	refusedUnchanged(t, path, nil, "not bailiff's state")
}

// TestReadOnly: a database this user cannot write is refused at open
// (the gateway could not keep an ask), saying so. As root, permissions do
// not bind, so the check runs in a child as nobody.
func TestReadOnly(t *testing.T) {
	if p := os.Getenv("BAILIFF_STATE_RO"); p != "" {
		_, err := state.Open(p)
		if err == nil {
			t.Fatal("opened")
		}
		os.Stdout.WriteString("ERR: " + err.Error() + "\n")
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	s := open(t, path)
	if err := s.AddAsk(ask("kept")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	var msg string
	if os.Getuid() != 0 {
		_, err := state.Open(path)
		if err == nil {
			t.Fatal("a read-only database was opened")
		}
		if !errors.Is(err, state.ErrReadOnly) {
			t.Fatalf("error %v is not ErrReadOnly", err)
		}
		msg = err.Error()
	} else {
		msg = asNobody(t, dir, path)
	}
	t.Logf("refused: %s", msg)
	if !strings.Contains(msg, "read-only") || !strings.Contains(msg, path) {
		t.Fatalf("error %q does not say the file is read-only", msg)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("the read-only database changed")
	}
}

func asNobody(t *testing.T, dir, path string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "state.test")
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-test.run=^TestReadOnly$", "-test.v")
	cmd.Env = append(os.Environ(), "BAILIFF_STATE_RO="+path, "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, _ := cmd.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if m, ok := strings.CutPrefix(line, "ERR: "); ok {
			return m
		}
	}
	t.Fatalf("the child as nobody said:\n%s", out)
	return ""
}

// TestFullDisk: a write the disk refuses fails with ErrFull and changes
// nothing; every write acknowledged before it is still there, and the
// store works again once there is room. Both SQLite's own SQLITE_FULL
// (the database at its size cap) and an ENOSPC from the fault hook.
func TestFullDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	if err := s.LimitPages(8); err != nil {
		t.Fatal(err)
	}
	var acked []string
	var full error
	for i := range 10000 {
		a := ask(strings.Repeat("k", 40) + string(rune('a'+i%26)) + strings.Repeat("z", i%7) + string(rune('0'+i/26%10)) + string(rune('0'+i/260)))
		a.Args = strings.Repeat("{}", 200)
		if full = s.AddAsk(a); full != nil {
			break
		}
		acked = append(acked, a.ID)
	}
	t.Logf("refused: %v", full)
	if !errors.Is(full, state.ErrFull) || !strings.Contains(full.Error(), "nothing was changed") {
		t.Fatalf("the write past the cap: %v", full)
	}
	if len(acked) == 0 {
		t.Fatal("nothing fitted")
	}
	restore := fault.SetErr(func(point, detail string) error {
		if point == fault.StateWrite {
			return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
		}
		return nil
	})
	err := s.AddAnswer(acked[0], answer("approve"))
	restore()
	if !errors.Is(err, state.ErrFull) {
		t.Fatalf("the write on ENOSPC: %v", err)
	}
	if _, ok, _ := s.GetAnswer(acked[0]); ok {
		t.Fatal("the refused answer was kept")
	}
	s.Close()
	s = open(t, path)
	list, err := s.Pending("")
	if err != nil || len(list) != len(acked) {
		t.Fatalf("after the full disk: %d pending (%v), %d acknowledged", len(list), err, len(acked))
	}
	if err := s.AddAnswer(acked[0], answer("approve")); err != nil {
		t.Fatalf("with room again: %v", err)
	}
}
