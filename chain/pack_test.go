package chain

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// packOf writes n contents through one store and returns their digests
// and bytes.
func packOf(t *testing.T, dir string, n int, sync bool) ([]string, [][]byte) {
	t.Helper()
	e := OpenEvidence(dir)
	var ds []string
	var data [][]byte
	for i := range n {
		b := []byte(fmt.Sprintf(`{"text":"output %d %s"}`, i, strings.Repeat("x", i*7)))
		d, err := e.Put(b, sync)
		if err != nil {
			t.Fatal(err)
		}
		ds, data = append(ds, d), append(data, b)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return ds, data
}

// TestPackCrashAtEveryByte: a segment cut anywhere (a crash mid-write)
// with its index whole, cut at the same place, or gone, gives back every
// entry wholly before the cut with its bytes, and every later one as
// missing or as being where a torn write is: never other bytes.
func TestPackCrashAtEveryByte(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	ds, data := packOf(t, src, 6, false)
	seg, _ := os.ReadFile(segName(src, 1, segData))
	idx, _ := os.ReadFile(segName(src, 1, segIndex))
	ends := []int{}
	end := len(packMagic)
	for _, b := range data {
		end += entryHead + len(b)
		ends = append(ends, end)
	}
	if end != len(seg) {
		t.Fatalf("the segment holds %d bytes, want %d", len(seg), end)
	}
	for cut := 0; cut <= len(seg); cut++ {
		for _, index := range []string{"whole", "cut", "gone", "garbage"} {
			dir := filepath.Join(t.TempDir(), "ev")
			os.MkdirAll(dir, 0o700)
			os.WriteFile(segName(dir, 1, segData), seg[:cut], 0o600)
			switch index {
			case "whole":
				os.WriteFile(segName(dir, 1, segIndex), idx, 0o600)
			case "cut":
				os.WriteFile(segName(dir, 1, segIndex), idx[:min(len(idx), cut*len(idx)/len(seg))], 0o600)
			case "garbage":
				os.WriteFile(segName(dir, 1, segIndex), append(append([]byte{}, idx[:len(idx)/2]...), bytes.Repeat([]byte{0xff}, 100)...), 0o600)
			}
			e := OpenEvidence(dir)
			for i, d := range ds {
				got, err := e.Get(d)
				whole := ends[i] <= cut
				switch {
				case whole && (err != nil || !bytes.Equal(got, data[i])):
					t.Fatalf("cut at %d, index %s: entry %d = %q, %v; want its bytes", cut, index, i, got, err)
				case !whole && err == nil:
					t.Fatalf("cut at %d, index %s: entry %d = %q; want no bytes", cut, index, i, got)
				case !whole && !errors.Is(err, ErrMissing) && !strings.Contains(err.Error(), "a torn write, or damage") && cut >= len(packMagic):
					t.Fatalf("cut at %d, index %s: entry %d = %v; want it missing, or the torn write named", cut, index, i, err)
				}
			}
		}
	}
}

// TestPackIndexThatLies: an index naming entries at other places than
// the segment holds them is caught by the head it points at, and the
// segment is read instead.
func TestPackIndexThatLies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	ds, data := packOf(t, dir, 4, false)
	swapIndexDigests(t, dir)
	e := OpenEvidence(dir)
	for i, d := range ds {
		if got, err := e.Get(d); err != nil || !bytes.Equal(got, data[i]) {
			t.Fatalf("entry %d = %q, %v; want its bytes", i, got, err)
		}
	}
}

// TestPackNotAPack: a segment that is not one is named when a content is
// not found, instead of the content being called missing.
func TestPackNotAPack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	ds, _ := packOf(t, dir, 2, false)
	os.WriteFile(segName(dir, 1, segData), []byte("this is not an evidence pack at all, no"), 0o600)
	_, err := OpenEvidence(dir).Get(ds[0])
	if err == nil || errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "pack-000001.data is not an evidence pack") {
		t.Fatalf("Get from a broken segment = %v", err)
	}
}

// TestPackWritersAndReaders: stores opened on one directory at once each
// write a segment of their own, and a reader loaded before they wrote
// finds what they wrote after.
func TestPackWritersAndReaders(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	reader := OpenEvidence(dir)
	if _, err := reader.Get(Digest([]byte("nothing yet"))); !errors.Is(err, ErrMissing) {
		t.Fatalf("Get from an absent store = %v", err)
	}
	var wg sync.WaitGroup
	digests := make([][]string, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := OpenEvidence(dir)
			for i := range 50 {
				// Every writer puts the shared content too.
				for _, s := range []string{fmt.Sprintf("w%d-%d", w, i), "shared"} {
					d, err := e.Put([]byte(s), i%2 == 0)
					if err != nil {
						t.Error(err)
						return
					}
					digests[w] = append(digests[w], d)
				}
			}
		}()
	}
	wg.Wait()
	nums, _ := segNums(dir)
	if len(nums) != 4 {
		t.Errorf("4 writers made segments %v, want 4", nums)
	}
	for w := range 4 {
		for i := range 50 {
			if got, err := reader.Get(digests[w][2*i]); err != nil || string(got) != fmt.Sprintf("w%d-%d", w, i) {
				t.Fatalf("writer %d entry %d = %q, %v", w, i, got, err)
			}
		}
	}
}

// TestPurgeRemovesTheBytes: a purged content's bytes are in no file of the
// store after, every other content reads as before, the purge mark is
// kept, and content stored again after its purge reads again.
func TestPurgeRemovesTheBytes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	secret := []byte(`{"text":"the secret recipe is 42"}`)
	// Two writers both store it: both copies must go.
	var d string
	for range 2 {
		e := OpenEvidence(dir)
		e.Put([]byte("before"), true)
		d, _ = e.Put(secret, true)
		e.Put([]byte("after"), true)
		e.Close()
	}
	e := OpenEvidence(dir)
	if !e.Has(d) {
		t.Fatal("Has = false before the purge")
	}
	if err := e.Remove(d); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	for _, f := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, f.Name()))
		if bytes.Contains(b, []byte("secret recipe")) {
			t.Errorf("%s still holds the purged bytes", f.Name())
		}
	}
	for _, r := range []Evidence{e, OpenEvidence(dir)} {
		if _, err := r.Get(d); !errors.Is(err, ErrPurged) {
			t.Errorf("Get of purged content = %v, want ErrPurged", err)
		}
		if r.Has(d) || !r.Purged(d) {
			t.Errorf("after a purge Has = %v, Purged = %v", r.Has(d), r.Purged(d))
		}
		for _, s := range []string{"before", "after"} {
			if got, err := r.Get(Digest([]byte(s))); err != nil || string(got) != s {
				t.Errorf("Get(%s) after a purge = %q, %v", s, got, err)
			}
		}
	}
	again := OpenEvidence(dir)
	if _, err := again.Put(secret, true); err != nil {
		t.Fatal(err)
	}
	if got, err := OpenEvidence(dir).Get(d); err != nil || !bytes.Equal(got, secret) {
		t.Errorf("content stored again after its purge = %q, %v", got, err)
	}
}

// TestGroupCommit: synced Puts that wait while a sync runs share the next
// one, and each returns only after a sync that began after its entry was
// written.
func TestGroupCommit(t *testing.T) {
	e := OpenEvidence(filepath.Join(t.TempDir(), "ev"))
	e.Put([]byte("first"), true)
	old := syncFile
	defer func() { syncFile = old }()
	var mu sync.Mutex
	syncs := 0
	syncFile = func(f *os.File) error {
		mu.Lock()
		syncs++
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		return old(f)
	}
	const n = 64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if _, err := e.Put([]byte(fmt.Sprint("call ", i)), true); err != nil {
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if syncs == 0 || syncs > n/4 {
		t.Errorf("%d synced Puts at once took %d syncs, want them shared", n, syncs)
	}
	// A content put unsynced and then synced is synced the second time.
	before := syncs
	e.Put([]byte("lazy"), false)
	e.Put([]byte("lazy"), true)
	if syncs != before+1 {
		t.Errorf("a synced Put of content put unsynced took %d syncs, want 1", syncs-before)
	}
}

// FuzzPack: whatever bytes a store's segment, index and purge marks hold,
// reading never panics, nothing is returned as content unless it hashes
// to its digest, and a writer beside the damage stores and reads back.
func FuzzPack(f *testing.F) {
	dir := filepath.Join(f.TempDir(), "seed")
	packOf(&testing.T{}, dir, 3, false)
	e := OpenEvidence(dir)
	e.Remove(Digest([]byte(`{"text":"output 1 xxxxxxx"}`)))
	seg, _ := os.ReadFile(segName(dir, 1, segData))
	idx, _ := os.ReadFile(segName(dir, 1, segIndex))
	purged, _ := os.ReadFile(filepath.Join(dir, purgedName))
	f.Add(seg, idx, purged)
	f.Add(seg[:len(seg)-3], idx[:len(idx)-5], purged[:10])
	f.Add([]byte(packMagic), []byte(indexMagic), []byte("sha256:zz\n"))
	f.Fuzz(func(t *testing.T, seg, idx, purged []byte) {
		dir := filepath.Join(t.TempDir(), "ev")
		os.MkdirAll(dir, 0o700)
		os.WriteFile(segName(dir, 1, segData), seg, 0o600)
		os.WriteFile(segName(dir, 1, segIndex), idx, 0o600)
		os.WriteFile(filepath.Join(dir, purgedName), purged, 0o600)
		e := OpenEvidence(dir)
		e.Has(Digest(nil))
		keys, _ := e.Digests()
		s := e.store()
		s.mu.RLock()
		for k := range s.purged {
			keys = append(keys, fmt.Sprintf("sha256:%x", k))
		}
		s.mu.RUnlock()
		for _, d := range keys {
			got, err := e.Get(d)
			if err == nil && Digest(got) != d {
				t.Fatalf("Get(%s) returned bytes hashing to %s", d, Digest(got))
			}
		}
		d, err := e.Put([]byte("new content"), false)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := OpenEvidence(dir).Get(d); err != nil || string(got) != "new content" {
			t.Fatalf("content put beside a damaged segment = %q, %v", got, err)
		}
	})
}

// TestPackDigestsSharingTheirFirstBytes: the index finds a content by its
// digest's first 8 bytes; contents whose digests share them (a server can
// make its outputs do so with 2^32 work) are each found, one that is not
// stored is not found, and a purge of one leaves the other.
func TestPackDigestsSharingTheirFirstBytes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	e := OpenEvidence(dir)
	a := []byte("content a")
	ka := sha256Of(a)
	kb, kc := ka, ka
	kb[31] ^= 1
	kc[31] ^= 2
	s := e.store()
	// b is stored under a digest that is not its bytes' (as an altered
	// copy is): only the index's behaviour is under test here.
	for _, x := range []struct {
		k [32]byte
		d []byte
	}{{ka, a}, {kb, []byte("content b")}, {ka, a}} {
		if err := s.put(x.k, x.d, false); err != nil {
			t.Fatal(err)
		}
	}
	// A second store writes a again: two entries of a.
	if _, err := OpenEvidence(dir).Put(a, false); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*store{s, OpenEvidence(dir).store()} {
		if got, ok, err := r.get(ka, true); !ok || err != nil || string(got) != "content a" {
			t.Errorf("a = %q, %v, %v", got, ok, err)
		}
		if got, ok, err := r.get(kb, true); !ok || err != nil || string(got) != "content b" {
			t.Errorf("b = %q, %v, %v", got, ok, err)
		}
		if got, ok, err := r.get(kc, true); ok || err != nil {
			t.Errorf("c, never stored = %q, %v, %v", got, ok, err)
		}
	}
	if _, err := OpenEvidence(dir).Get(fmt.Sprintf("sha256:%x", kc)); !errors.Is(err, ErrMissing) {
		t.Errorf("Get of c = %v, want ErrMissing", err)
	}
	if err := OpenEvidence(dir).Remove(Digest(a)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{segName(dir, 1, segData), segName(dir, 2, segData)} {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("content a")) {
			t.Errorf("%s still holds a after its purge", f)
		}
		if f == segName(dir, 1, segData) && !bytes.Contains(b, []byte("content b")) {
			t.Errorf("the purge of a removed b")
		}
	}
	if got, ok, err := OpenEvidence(dir).store().get(kb, true); !ok || err != nil || string(got) != "content b" {
		t.Errorf("b after the purge of a = %q, %v, %v", got, ok, err)
	}
}

func sha256Of(b []byte) [32]byte {
	key, _ := ParseDigest(Digest(b))
	return key
}

// TestPackContentOfEverySize: an entry is read with a guess of its
// length, then the rest: contents shorter and longer than the guess read
// back whole, and a head edited to claim more than the segment holds
// gives no bytes and no huge allocation.
func TestPackContentOfEverySize(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	e := OpenEvidence(dir)
	var ds []string
	var data [][]byte
	for _, n := range []int{0, 1, 4096 - entryHead - 1, 4096 - entryHead, 4096 - entryHead + 1, 5000, 1 << 20} {
		b := bytes.Repeat([]byte{byte('a' + n%26)}, n)
		d, err := e.Put(b, false)
		if err != nil {
			t.Fatal(err)
		}
		ds, data = append(ds, d), append(data, b)
	}
	e.Close()
	r := OpenEvidence(dir)
	for i, d := range ds {
		if got, err := r.Get(d); err != nil || !bytes.Equal(got, data[i]) {
			t.Fatalf("content %d (%d bytes): %d bytes, %v", i, len(data[i]), len(got), err)
		}
	}
	// The last entry's head now claims 1 TiB.
	l, ok, _ := newStore(dir).lookup(sha256Of(data[len(data)-1]), true)
	if !ok {
		t.Fatal("the last content is not in the index")
	}
	f, _ := os.OpenFile(segName(dir, 1, segData), os.O_WRONLY, 0)
	f.WriteAt([]byte{0, 0, 1, 0, 0, 0, 0, 0}, l.off-8)
	f.Close()
	if got, err := OpenEvidence(dir).Get(ds[len(ds)-1]); err == nil || len(got) > 0 {
		t.Fatalf("an entry whose head claims 1 TiB gave %d bytes, %v", len(got), err)
	}
}

// TestPackTakesUpTheLastSegment: a store written once per client session
// appends to the last segment when no writer holds it and it ends whole,
// so five runs make one segment, not five; a content from an earlier run
// is stored again (that entry may be damaged or unsynced); a segment
// another store holds, or one with a torn tail, is left for a new one.
func TestPackTakesUpTheLastSegment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ev")
	for i := range 5 {
		e := OpenEvidence(dir)
		for _, c := range []string{"shared output", fmt.Sprint("run ", i)} {
			if _, err := e.Put([]byte(c), true); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if nums, _ := segNums(dir); len(nums) != 1 {
		t.Fatalf("five runs made segments %v, want one", nums)
	}
	seg, _ := os.ReadFile(segName(dir, 1, segData))
	if n := bytes.Count(seg, []byte("shared output")); n != 5 {
		t.Errorf("the shared output is in the segment %d times, want once a run", n)
	}
	r := OpenEvidence(dir)
	for i := range 5 {
		if got, err := r.Get(Digest([]byte(fmt.Sprint("run ", i)))); err != nil || string(got) != fmt.Sprint("run ", i) {
			t.Fatalf("run %d: %q, %v", i, got, err)
		}
	}
	// Held by a store still open: the next one starts segment 2.
	held := OpenEvidence(dir)
	held.Put([]byte("held"), false)
	other := OpenEvidence(dir)
	other.Put([]byte("other"), false)
	if nums, _ := segNums(dir); len(nums) != 2 {
		t.Fatalf("a store beside one that holds the last segment made segments %v", nums)
	}
	held.Close()
	other.Close()
	// A torn tail is not appended after.
	f, _ := os.OpenFile(segName(dir, 2, segData), os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte("torn"))
	f.Close()
	e := OpenEvidence(dir)
	e.Put([]byte("after the tear"), false)
	e.Close()
	if nums, _ := segNums(dir); len(nums) != 3 {
		t.Fatalf("a store after a torn segment made segments %v, want a third", nums)
	}
	if got, err := OpenEvidence(dir).Get(Digest([]byte("after the tear"))); err != nil || string(got) != "after the tear" {
		t.Fatalf("content after the tear: %q, %v", got, err)
	}
}

// swapIndexDigests swaps the digests of the first two entries of the
// first segment's index: each then names the other's place, and the
// offsets still chain.
func swapIndexDigests(t *testing.T, dir string) {
	t.Helper()
	idx, err := os.ReadFile(segName(dir, 1, segIndex))
	if err != nil {
		t.Fatal(err)
	}
	a, b := len(indexMagic), len(indexMagic)+indexEntry
	first := append([]byte{}, idx[a:a+32]...)
	copy(idx[a:a+32], idx[b:b+32])
	copy(idx[b:b+32], first)
	if err := os.WriteFile(segName(dir, 1, segIndex), idx, 0o600); err != nil {
		t.Fatal(err)
	}
}
