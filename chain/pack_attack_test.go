package chain

// Attacks on the evidence packs, from a review of their first version:
// each states what a correct store does, and failed before its fix (the
// ones marked "held" did not).

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

type advEntry struct {
	key  [sha256.Size]byte
	data []byte
}

func advE(s string) advEntry { return advEntry{sha256.Sum256([]byte(s)), []byte(s)} }

// advSeg writes segment num of dir holding es, and (withIndex) its index.
// It returns the offset of each entry's bytes.
func advSeg(t *testing.T, dir string, num int, es []advEntry, withIndex bool) []int64 {
	t.Helper()
	os.MkdirAll(dir, 0o700)
	seg := []byte(packMagic)
	idx := []byte(indexMagic)
	var offs []int64
	for _, e := range es {
		ie := make([]byte, indexEntry)
		copy(ie, e.key[:])
		binary.BigEndian.PutUint64(ie[32:], uint64(len(seg)))
		binary.BigEndian.PutUint64(ie[40:], uint64(len(e.data)))
		idx = append(idx, ie...)
		h := make([]byte, entryHead)
		copy(h, e.key[:])
		binary.BigEndian.PutUint64(h[32:], uint64(len(e.data)))
		seg = append(seg, h...)
		offs = append(offs, int64(len(seg)))
		seg = append(seg, e.data...)
	}
	if err := os.WriteFile(segName(dir, num, segData), seg, 0o600); err != nil {
		t.Fatal(err)
	}
	if withIndex {
		if err := os.WriteFile(segName(dir, num, segIndex), idx, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return offs
}

// advZeroAt overwrites n bytes at off of a file with zeroes: what a crash
// can leave where a file's size reached the disk and its data did not.
func advZeroAt(t *testing.T, name string, off int64, n int) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, n), off); err != nil {
		t.Fatal(err)
	}
}

func advFileHolds(t *testing.T, dir string, needle []byte) []string {
	t.Helper()
	var in []string
	ents, _ := os.ReadDir(dir)
	for _, f := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, f.Name()))
		if bytes.Contains(b, needle) {
			in = append(in, f.Name())
		}
	}
	return in
}

// 1. A synced Put of content whose entry a crash left with its head but
// not its bytes (the size of the segment reached the disk, its data did
// not: ext4 data=writeback, XFS) dedupes against the damaged entry, and
// reports durable content that does not read back.
func TestAttackPackSyncedPutDedupesAgainstDamagedEntry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	x := advE(`{"text":"an output the log will name"}`)
	offs := advSeg(t, dir, 1, []advEntry{x}, true)
	advZeroAt(t, segName(dir, 1, segData), offs[0], len(x.data))

	putThenGet(t, dir, x)
}

// 1b. The same with only the (never synced) index surviving: the index
// names the entry, the segment holds zeroes there.
func TestAttackPackSyncedPutDedupesAgainstIndexOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	x := advE(`{"text":"an output the log will name"}`)
	advSeg(t, dir, 1, []advEntry{x}, true)
	advZeroAt(t, segName(dir, 1, segData), int64(len(packMagic)), entryHead+len(x.data))

	putThenGet(t, dir, x)
}

// 2. Content stored twice (two writers): the first copy synced and whole,
// the later copy damaged by a crash. Get reads only the latest entry and
// reports the content altered although a good copy is in the store.
func TestAttackPackGetIgnoresGoodEarlierCopy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	x := advE(`{"text":"stored by two gateways"}`)
	advSeg(t, dir, 1, []advEntry{x}, true)
	offs := advSeg(t, dir, 2, []advEntry{x}, true)
	advZeroAt(t, segName(dir, 2, segData), offs[0], len(x.data))
	got, err := OpenEvidence(dir).Get("sha256:" + fmt.Sprintf("%x", x.key))
	if err != nil || !bytes.Equal(got, x.data) {
		t.Fatalf("Get = %q, %v; a whole copy is in pack-000001", got, err)
	}
}

// 3. A long-running writer (a gateway) that knew a content before
// another process purged it dedupes a later synced Put of it against the
// wiped entry: content "stored again after its purge" is lost, and
// verify calls it purged.
func TestAttackPackStaleWriterAfterPurge(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	secret := []byte(`{"text":"shown twice"}`)
	gw := OpenEvidence(dir)
	d, err := gw.Put(secret, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := OpenEvidence(dir).Remove(d); err != nil { // bailiff purge, another process
		t.Fatal(err)
	}
	if _, err := gw.Put(secret, true); err != nil { // the tool returns it again
		t.Fatal(err)
	}
	gw.Close()
	if got, err := OpenEvidence(dir).Get(d); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("content stored again after its purge = %q, %v", got, err)
	}
}

// 4. A store opened before a purge by another process reports the purged
// content as altered, not purged (the purge marks are not re-read when
// an entry is found with the wrong bytes).
func TestAttackPackStaleReaderCallsPurgedAltered(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	w := OpenEvidence(dir)
	d, _ := w.Put([]byte(`{"text":"later purged"}`), true)
	w.Close()
	r := OpenEvidence(dir)
	if _, err := r.Get(d); err != nil {
		t.Fatal(err)
	}
	if err := OpenEvidence(dir).Remove(d); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(d); !errors.Is(err, ErrPurged) {
		t.Fatalf("Get after a purge by another store = %v, want ErrPurged", err)
	}
}

// 5. wipe trusts the index without checking the heads it points at: an
// index swapping the names of two entries of one length makes a purge
// zero the other content and leave the purged bytes in the segment.
func TestAttackPackWipeTrustsIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	x, y := advE(`{"text":"SECRET-AAAA"}`), advE(`{"text":"public-BBBB"}`)
	advSeg(t, dir, 1, []advEntry{x, y}, true)
	swapIndexDigests(t, dir)

	if err := OpenEvidence(dir).Remove(fmt.Sprintf("sha256:%x", x.key)); err != nil {
		t.Fatal(err)
	}
	if in := advFileHolds(t, dir, []byte("SECRET-AAAA")); len(in) > 0 {
		t.Errorf("after Remove returned nil, %v still hold the purged bytes", in)
	}
	if got, err := OpenEvidence(dir).Get(fmt.Sprintf("sha256:%x", y.key)); err != nil {
		t.Errorf("other content after the purge = %q, %v", got, err)
	}
}

// 6. A flipped bit in one entry's length (no index, or one a read has
// dropped) ends the scan there: every later entry is reported missing
// (not "the pack is damaged"), and a purge of a later content returns
// nil leaving its bytes in the segment.
func TestAttackPackDamagedLengthHidesLaterEntries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	a, x := advE(`{"text":"first"}`), advE(`{"text":"SECRET-CCCC"}`)
	advSeg(t, dir, 1, []advEntry{a, x}, false)
	f, _ := os.OpenFile(segName(dir, 1, segData), os.O_WRONLY, 0)
	f.WriteAt([]byte{0x40}, int64(len(packMagic))+32) // length's top byte
	f.Close()
	dx := fmt.Sprintf("sha256:%x", x.key)
	_, gerr := OpenEvidence(dir).Get(dx)
	rerr := OpenEvidence(dir).Remove(dx)
	in := advFileHolds(t, dir, []byte("SECRET-CCCC"))
	if errors.Is(gerr, ErrMissing) || (rerr == nil && len(in) > 0) {
		t.Fatalf("a damaged length in entry 1: Get(entry 2) = %v; Remove(entry 2) = %v with its bytes still in %v", gerr, rerr, in)
	}
}

// 6b. A segment whose first bytes are damaged is "not an evidence pack":
// Remove of content in it returns nil and leaves its bytes in the store.
func TestAttackPackRemoveSkipsUnreadableSegment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	x := advE(`{"text":"SECRET-DDDD"}`)
	advSeg(t, dir, 1, []advEntry{x}, true)
	advZeroAt(t, segName(dir, 1, segData), 0, 1)
	err := OpenEvidence(dir).Remove(fmt.Sprintf("sha256:%x", x.key))
	if in := advFileHolds(t, dir, []byte("SECRET-DDDD")); err == nil && len(in) > 0 {
		t.Fatalf("Remove = nil, but %v still hold the purged bytes", in)
	}
}

// 7. A transient error opening a segment (EMFILE here) sticks to it for
// the store's life: a long-running store keeps saying so, and a purge by
// it returns nil without wiping that segment.
func TestAttackPackTransientOpenErrorSticks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	x := advE(`{"text":"SECRET-EEEE"}`)
	advSeg(t, dir, 1, []advEntry{advE("other")}, true)
	e := OpenEvidence(dir)
	e.Has(Digest([]byte("other")))         // loaded, as a gateway's store is
	advSeg(t, dir, 2, []advEntry{x}, true) // another writer's segment

	var old syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old)
	// Use up the descriptors, so the store's open of a segment fails.
	var hold []*os.File
	lim := syscall.Rlimit{Cur: 64, Max: old.Max}
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		hold = append(hold, f)
	}
	_, err1 := e.Get(Digest([]byte("absent")))
	for _, f := range hold {
		f.Close()
	}
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
	t.Logf("with no descriptors left: %v", err1)
	rerr := e.Remove(fmt.Sprintf("sha256:%x", x.key))
	in := advFileHolds(t, dir, []byte("SECRET-EEEE"))
	_, err2 := e.Get(Digest([]byte("absent")))
	if (rerr == nil && len(in) > 0) || !errors.Is(err2, ErrMissing) {
		t.Fatalf("descriptors back: Remove = %v with bytes still in %v; Get(absent) = %v", rerr, in, err2)
	}
}

// 8. A sparse index (free to make: truncate -s) sizes the map of the
// first segment loaded by its apparent size: memory out of proportion
// to what is stored, and fatal past the machine's.
func TestAttackPackSparseIndexSizesMap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	advSeg(t, dir, 1, []advEntry{advE("one")}, true)
	os.Truncate(segName(dir, 1, segIndex), 48<<20) // 1M "entries" of zeroes
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	e := OpenEvidence(dir)
	e.Has(Digest([]byte("one")))
	runtime.ReadMemStats(&m1)
	if grew := m1.TotalAlloc - m0.TotalAlloc; grew > 16<<20 {
		t.Fatalf("a store of one 3-byte content with a 48 MiB sparse index allocated %d MiB (a 1 TiB sparse index asks for ~1000x that)", grew>>20)
	}
}

// 9. A sparse segment of zeroes reads as a run of empty entries under the
// zero digest, each appended to extra: memory and time linear in the
// apparent size (a 1 TiB sparse file costs nothing to make).
func TestAttackPackSparseSegmentOfZeroes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	advSeg(t, dir, 1, nil, false)
	os.Truncate(segName(dir, 1, segData), int64(len(packMagic))+40*200_000)
	e := OpenEvidence(dir)
	start := time.Now()
	e.Has(Digest([]byte("x")))
	n := len(e.s.idx.first) + len(e.s.idx.other)
	for _, ps := range e.s.idx.dups {
		n += len(ps)
	}
	if n > 1000 {
		t.Fatalf("8 MB of sparse zeroes became %d entries in memory (%v); 1 TiB would be 27 billion", n, time.Since(start))
	}
}

// 10. A FIFO where a segment (or the purged file) should be hangs every
// reader: verify never returns.
func TestAttackPackFIFOSegmentHangs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	advSeg(t, dir, 1, []advEntry{advE("one")}, true)
	fifo := segName(dir, 2, segData)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := OpenEvidence(dir).Get(Digest([]byte("absent")))
		done <- err
	}()
	select {
	case err := <-done:
		t.Logf("Get = %v", err)
	case <-time.After(3 * time.Second):
		// Let it go: open the other end.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("Get hung on a FIFO named pack-000002.data")
	}
}

// 10b. purged as a symlink to /dev/zero: readPurged reads it all into
// memory. Run in a child with its address space limited to 2 GiB.
func TestAttackPackPurgedDevZero(t *testing.T) {
	if os.Getenv("BAILIFF_PACK_CHILD") == "1" {
		dir := filepath.Join(t.TempDir(), "ev")
		advSeg(t, dir, 1, []advEntry{advE("one")}, true)
		os.Symlink("/dev/zero", filepath.Join(dir, purgedName))
		done := make(chan error, 1)
		go func() { _, err := OpenEvidence(dir).Get(Digest([]byte("absent"))); done <- err }()
		select {
		case err := <-done:
			fmt.Println("GET RETURNED", err)
		case <-time.After(20 * time.Second):
			fmt.Println("GET STILL RUNNING after 20s")
			os.Exit(3)
		}
		return
	}
	cmd := exec.Command("sh", "-c", "ulimit -v 2000000; exec \"$0\" -test.run='^TestAttackPackPurgedDevZero$' -test.v", os.Args[0])
	cmd.Env = append(os.Environ(), "BAILIFF_PACK_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tail := out
		if len(tail) > 600 {
			tail = tail[:600]
		}
		t.Fatalf("reading a store whose purged file is /dev/zero: %v\n%s", err, tail)
	}
}

// 11. Close (or a writer moving to a new segment) races a group-commit
// sync: closeWriter reads seg.named without seg.sync. Run with -race.
func TestAttackPackRaceCloseVsSync(t *testing.T) {
	e := OpenEvidence(filepath.Join(t.TempDir(), "ev"))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				if _, err := e.Put([]byte(fmt.Sprint(g, " ", i)), true); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 30 {
			e.Close()
		}
	}()
	wg.Wait()
}

// 11b. Everything at once on one store and across stores (run with
// -race): puts, gets, removes, Has, Digests, Close.
func TestAttackPackRaceEverything(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	shared := OpenEvidence(dir)
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := shared
			if g%2 == 1 {
				e = OpenEvidence(dir)
			}
			for i := range 40 {
				b := []byte(fmt.Sprint("c", i%7))
				d, err := e.Put(b, i%3 == 0)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := e.Get(d)
				if err == nil && !bytes.Equal(got, b) {
					t.Errorf("Get returned other bytes")
				}
				if err != nil && !errors.Is(err, ErrPurged) {
					var ee *EvidenceError
					if !errors.As(err, &ee) {
						t.Errorf("Get = %v", err)
					}
				}
				switch i % 10 {
				case 3:
					e.Remove(d)
				case 5:
					e.Has(d)
					e.Digests()
				case 7:
					e.Close()
				}
			}
		}()
	}
	wg.Wait()
}

// 12. After a failed fsync of one store's segment, another store (a
// second process) deduping a synced Put of the same content against that
// entry fsyncs it again through its own descriptor and reports it
// durable: the very thing TestAttackPutAfterFailedSyncIsNotDurable says
// proves nothing.
func TestAttackPackDedupeAcrossStoresAfterFailedSync(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	a := OpenEvidence(dir)
	a.Put([]byte("warm up"), false) // a's segment exists
	b := OpenEvidence(dir)
	old := syncFile
	defer func() { syncFile = old }()
	var failed sync.Map
	syncFile = func(f *os.File) error {
		if f == a.s.w.seg.f {
			failed.Store(f, true)
			return errors.New("EIO (injected)")
		}
		return old(f)
	}
	x := []byte(`{"text":"the output"}`)
	if _, err := a.Put(x, true); err == nil {
		t.Fatal("injected failure not seen")
	}
	d, err := b.Put(x, true)
	if err != nil {
		return // b wrote its own copy or refused: fine
	}
	b.s.mu.RLock()
	l, _ := b.s.holds(sha256.Sum256(x))
	b.s.mu.RUnlock()
	if l.seg.num == a.s.segs[0].num || l.seg.num == 1 {
		t.Fatalf("b.Put(%s, sync) = nil, durable only in a's segment %d whose fsync failed", d, l.seg.num)
	}
}

// 13. repair --pack run again after a crash: an entry the first run left
// damaged (its bytes zeroes) is taken as the content, and the good file
// is removed.
func TestAttackPackPackRerunKeepsDamagedEntryDropsGoodFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	x := advE(`{"text":"old per-file content"}`)
	offs := advSeg(t, dir, 1, []advEntry{x}, true)
	advZeroAt(t, segName(dir, 1, segData), offs[0], len(x.data))
	hexd := fmt.Sprintf("%x", x.key)
	os.WriteFile(filepath.Join(dir, hexd), x.data, 0o600)
	d := "sha256:" + hexd
	if got, err := OpenEvidence(dir).Get(d); err != nil {
		t.Logf("before pack (file good, pack entry damaged): Get = %q, %v", got, err)
	}
	if _, err := OpenEvidence(dir).Pack(); err != nil {
		t.Fatal(err)
	}
	if got, err := OpenEvidence(dir).Get(d); err != nil || !bytes.Equal(got, x.data) {
		t.Fatalf("after repair --pack: Get = %q, %v (the good file was removed)", got, err)
	}
}

// 13b. repair --pack re-run after a kill -9 of the first run: every
// content dedupes against the first run's segment, which nothing synced;
// the re-run syncs nothing and removes the files.
func TestAttackPackPackRerunSyncsNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	os.MkdirAll(dir, 0o700)
	var ds []string
	for i := range 3 {
		b := []byte(fmt.Sprint("content ", i))
		ds = append(ds, Digest(b))
		os.WriteFile(filepath.Join(dir, ds[i][7:]), b, 0o600)
	}
	// The first run, killed before its Close: entries written, not synced.
	first := OpenEvidence(dir)
	for i := range 3 {
		first.s.put(sha256.Sum256([]byte(fmt.Sprint("content ", i))), []byte(fmt.Sprint("content ", i)), false)
	}
	// (no Close: the process died)
	old := syncFile
	defer func() { syncFile = old }()
	synced := 0
	syncFile = func(f *os.File) error { synced++; return old(f) }
	second := OpenEvidence(dir)
	if _, err := second.Pack(); err != nil {
		t.Fatal(err)
	}
	second.s.mu.RLock()
	wrote := second.s.w != nil
	second.s.mu.RUnlock()
	left := 0
	for _, d := range ds {
		if _, err := os.Stat(filepath.Join(dir, d[7:])); err == nil {
			left++
		}
	}
	if left == 0 && synced == 0 && !wrote {
		t.Fatalf("the re-run removed the files with pack-000001 (never synced) their only copy, and synced no segment")
	}
}

// 14. A store with many segments (every gateway restart, record, purge -o
// makes one) beside per-file content written before packs (a store not
// yet converted by repair --pack): every Get of an old file first misses
// the packs, and a miss re-reads every segment's index (an open, a 64 KiB
// buffer) and the purge marks.
func TestAttackPackManySegmentsMissCost(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	for i := 1; i <= 50; i++ {
		advSeg(t, dir, i, []advEntry{advE(fmt.Sprint("c", i))}, true)
	}
	var ds []string
	for i := range 1000 {
		b := []byte(fmt.Sprint("old ", i))
		ds = append(ds, Digest(b))
		os.WriteFile(filepath.Join(dir, ds[i][7:]), b, 0o600)
	}
	e := OpenEvidence(dir)
	for _, d := range ds {
		if _, err := e.Get(d); err != nil {
			t.Fatal(err)
		}
	}
	if e.s.refreshes > 1 {
		t.Fatalf("1000 Gets of per-file content beside 50 segments read the packs again %d times (every segment's index each)", e.s.refreshes)
	}
}

// 15. An Evidence literal (documented as still working) makes a new
// segment, and leaks two descriptors, on every Put.
func TestAttackPackLiteralPutSegmentPerCall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	e := Evidence{Dir: dir}
	for i := range 20 {
		if _, err := e.Put([]byte(fmt.Sprint("c", i)), false); err == nil {
			t.Fatal("Put through an Evidence literal was taken")
		}
	}
	nums, _ := segNums(dir)
	if len(nums) > 0 {
		t.Fatalf("20 Puts through Evidence{Dir} made %d segments", len(nums))
	}
}

// Held: repair --pack on odd entries: a symlink and a directory named
// like a digest are left and listed, other content converts; content
// beside its own purge mark is dropped (a new user's review: packing it
// kept what a purge was removing).
func TestAttackPackPackOddEntriesHeld(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	os.MkdirAll(dir, 0o700)
	good, marked := []byte("good"), []byte("marked but present")
	os.WriteFile(filepath.Join(dir, Digest(good)[7:]), good, 0o600)
	os.WriteFile(filepath.Join(dir, Digest(marked)[7:]), marked, 0o600)
	os.WriteFile(filepath.Join(dir, Digest(marked)[7:]+".purged"), nil, 0o600)
	target := filepath.Join(t.TempDir(), "outside")
	os.WriteFile(target, []byte("outside"), 0o600)
	os.Symlink(target, filepath.Join(dir, Digest([]byte("outside"))[7:]))
	os.Mkdir(filepath.Join(dir, Digest([]byte("dir"))[7:]), 0o700)
	done, err := OpenEvidence(dir).Pack()
	if err != nil || len(done.Strange) != 2 || done.Dropped != 1 {
		t.Fatalf("Pack = %+v, %v; want the symlink and the directory left, the marked content dropped", done, err)
	}
	r := OpenEvidence(dir)
	if got, err := r.Get(Digest(good)); err != nil || !bytes.Equal(got, good) {
		t.Errorf("Get(good) after pack = %q, %v", got, err)
	}
	// Its purge had stopped half-way: Pack finished it.
	if _, err := r.Get(Digest(marked)); !errors.Is(err, ErrPurged) {
		t.Errorf("content beside its purge mark, after pack: %v, want ErrPurged", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, Digest([]byte("outside"))[7:])); err != nil {
		t.Errorf("the symlink was removed: %v", err)
	}
	// Run again: the odd entries are named again, nothing else changes.
	if again, err := OpenEvidence(dir).Pack(); err != nil || len(again.Strange) != 2 || again.Contents+again.Dropped != 0 {
		t.Errorf("second Pack = %+v, %v", again, err)
	}
}

// Held: duplicate entries under one digest with other bytes, in any
// order and segment, never make Get return bytes that do not hash to it.
func TestAttackPackDuplicatesNeverWrongBytesHeld(t *testing.T) {
	x := advE("the real bytes")
	fake := advEntry{x.key, []byte("forged bytes!!")}
	for _, order := range [][]advEntry{{x, fake}, {fake, x}, {fake, fake}} {
		dir := filepath.Join(t.TempDir(), "ev")
		advSeg(t, dir, 1, order[:1], true)
		advSeg(t, dir, 2, order[1:], false)
		got, err := OpenEvidence(dir).Get(fmt.Sprintf("sha256:%x", x.key))
		if err == nil && !bytes.Equal(got, x.data) {
			t.Fatalf("Get returned %q with nil error", got)
		}
		t.Logf("order %q/%q: err = %v", order[0].data, order[1].data, err)
	}
}

// A damaged length in one entry, with the index whole: the entries after
// it still read (the index names them, their heads agree), the damage is
// named, and a purge of a later content zeroes that content and nothing
// the store keeps (a purge once zeroed every byte after the damage).
func TestAttackPackDamageInTheMiddleKeepsTheRest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	a, b, x := advE(`{"text":"kept-AAAA"}`), advE(`{"text":"kept-BBBB"}`), advE(`{"text":"SECRET-XXXX"}`)
	advSeg(t, dir, 1, []advEntry{a, b, x}, true)
	f, _ := os.OpenFile(segName(dir, 1, segData), os.O_WRONLY, 0)
	f.WriteAt([]byte{0x40}, int64(len(packMagic))+32) // a's length, top byte
	f.Close()
	e := OpenEvidence(dir)
	for _, c := range []advEntry{b, x} {
		if got, err := e.Get(fmt.Sprintf("sha256:%x", c.key)); err != nil || !bytes.Equal(got, c.data) {
			t.Fatalf("an entry after the damage: %q, %v", got, err)
		}
	}
	if _, err := e.Get(fmt.Sprintf("sha256:%x", a.key)); err == nil || !strings.Contains(err.Error(), "pack-000001.data is damaged") {
		t.Fatalf("the damaged entry: %v, want the damage named", err)
	}
	if err := OpenEvidence(dir).Remove(fmt.Sprintf("sha256:%x", x.key)); err != nil {
		t.Fatal(err)
	}
	if in := advFileHolds(t, dir, []byte("SECRET-XXXX")); len(in) > 0 {
		t.Errorf("the purged content is still in %v", in)
	}
	for _, kept := range []string{"kept-AAAA", "kept-BBBB"} {
		if in := advFileHolds(t, dir, []byte(kept)); len(in) == 0 {
			t.Errorf("the purge zeroed %s, which the store keeps", kept)
		}
	}
	if got, err := OpenEvidence(dir).Get(fmt.Sprintf("sha256:%x", b.key)); err != nil || !bytes.Equal(got, b.data) {
		t.Errorf("kept content after the purge: %q, %v", got, err)
	}
}

// putThenGet stores x synced over whatever the store holds, and reads it
// back from a store opened afresh: a synced Put that returned nil must
// have left x readable.
func putThenGet(t *testing.T, dir string, x advEntry) {
	t.Helper()
	e := OpenEvidence(dir)
	d, err := e.Put(x.data, true)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if got, err := OpenEvidence(dir).Get(d); err != nil || !bytes.Equal(got, x.data) {
		t.Fatalf("synced Put returned nil, but Get = %q, %v", got, err)
	}
}
