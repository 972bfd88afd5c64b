package chain

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// An evidence store keeps content in packs, as git keeps objects: a
// segment file of entries appended in the order the log is written, and an
// index beside it naming where each entry starts. A verify then reads the
// evidence nearly in file order, one read per content, instead of opening
// a file per content (which cost more than everything else together on a
// log of many small outputs: docs/decisions.md, "Evidence in packs").
//
// The segment is the truth: an entry is its content's SHA-256, its length
// and its bytes, so the index can always be rebuilt from it. The index is
// written after its entry and never synced; a reader trusts an index
// entry only where it continues the entries before it, checks the header
// it points at on every read, and scans the segment past the index's end
// for entries a crash kept out of it. A writer only ever appends to a
// segment it created (and holds it locked while it does), so a torn tail
// is always a segment's last bytes and never has a later entry behind it.
const (
	packMagic  = "bailiff evidence pack 1\n"
	indexMagic = "bailiff evidence index 1\n"
	entryHead  = sha256.Size + 8     // digest, length
	indexEntry = sha256.Size + 8 + 8 // digest, offset, length
	packLimit  = 256 << 20           // a writer starts a new segment past this
	purgedName = "purged"            // the store's purge marks, one digest a line
	segPrefix  = "pack-"             // pack-000001.data, pack-000001.index
	segData    = ".data"
	segIndex   = ".index"
	segDigits  = 6
	maxEntry   = int64(1) << 40 // a length past this is no entry's
)

// loc is where one entry's bytes are: n bytes at off in seg, after the
// entry's head.
type loc struct {
	seg    *segment
	off, n int64
}

type segment struct {
	i    int32 // its index in store.segs
	num  int
	f    *os.File // open for reading (and, for the writer, appending)
	end  int64    // entries are known up to here
	size int64    // the file's size when last read: bytes past end are no whole entry
	idx  int64    // bytes of the index read
	bad  error    // why the segment can never be read, if it cannot
	full bool     // rescanned from its start, its index ignored
	mine bool     // this store writes it, in this process
	// mineFrom is where this store's entries begin in it: a segment
	// taken up again holds entries it did not write.
	mineFrom int64
	indexed  int64 // entries its index names end here
	gaps     []gap // damaged bytes between whole entries

	sync    sync.Mutex // held while the segment is synced
	durable int64      // synced up to here
	named   bool       // its name and the store's synced too
	syncErr error      // a sync failed: nothing more of it is durable
	// syncFailed says so without waiting for the sync lock.
	syncFailed atomic.Bool
	// written is end, for syncTo, which must not take the store's lock.
	written atomic.Int64
}

// store is the packs of one evidence directory as this process knows
// them. It is loaded on first use and refreshed when a content is asked
// for that it does not know, since another process may be writing.
type store struct {
	dir string

	mu     sync.RWMutex
	loaded bool
	segs   []*segment
	idx    entries
	purged map[[sha256.Size]byte]bool
	pread  int64 // bytes of the purge marks read
	w      *packWriter

	refreshes int      // how often the packs were read again: a test counts them
	win       *windows // set for a store opened only to be read (ReadEvidence)
}

func newStore(dir string) *store {
	return &store{dir: dir, idx: newEntries(), purged: map[[sha256.Size]byte]bool{}}
}

func segName(dir string, num int, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%s%0*d", segPrefix, segDigits, num)+suffix)
}

// segNums lists the segments in dir, in order.
func segNums(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var nums []int
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), segPrefix)
		if !ok {
			continue
		}
		name, ok = strings.CutSuffix(name, segData)
		// Only the name segName gives: another spelling of the same
		// number (pack-0000007) would be opened as a file that is not.
		if n, err := strconv.Atoi(name); ok && err == nil && n > 0 && fmt.Sprintf("%0*d", segDigits, n) == name {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	return nums, nil
}

// refresh brings the store up to what is on disk: new segments, index
// entries and segment tails, and purge marks. Called with mu held.
func (s *store) refresh() error {
	s.refreshes++
	if !s.loaded {
		nums, err := segNums(s.dir)
		if err != nil {
			return err
		}
		for _, n := range nums {
			s.addSegment(&segment{num: n})
		}
		s.loaded = true
	} else {
		// A segment made since is numbered past the last one known (a
		// writer numbers its segment past every segment it sees).
		next := 1
		if len(s.segs) > 0 {
			next = s.segs[len(s.segs)-1].num + 1
		}
		for ; ; next++ {
			if _, err := os.Stat(segName(s.dir, next, segData)); err != nil {
				break
			}
			s.addSegment(&segment{num: next})
		}
	}
	var first error
	for _, g := range s.segs {
		if g.bad != nil || (s.w != nil && g == s.w.seg) {
			continue
		}
		err := s.catchUp(g)
		var np *notPack
		if errors.As(err, &np) {
			g.bad = err
		} else if err != nil && first == nil {
			// Tried again on the next refresh: one EMFILE must not
			// make a long-lived store give up on a segment.
			first = err
		}
	}
	if err := s.readPurged(); err != nil && first == nil {
		first = err
	}
	return first
}

// notPack is a segment that is no evidence pack, and never will be.
type notPack struct{ name, why string }

func (e *notPack) Error() string { return e.name + " " + e.why }

// regular opens name for reading only if it is a regular file: a FIFO
// would block the reader, a device or a symlink to one never ends.
func regular(name string) (*os.File, error) {
	st, err := os.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &notPack{filepath.Base(name), "is not a regular file"}
	}
	return os.Open(name)
}

// catchUp reads what was added to g since it was last read: index entries
// that continue the known entries, then entries in the segment past them.
func (s *store) catchUp(g *segment) error {
	name := segName(s.dir, g.num, segData)
	if g.f == nil {
		f, err := regular(name)
		if err != nil {
			return err
		}
		head := make([]byte, len(packMagic))
		n, err := io.ReadFull(f, head)
		if err != nil || string(head) != packMagic {
			f.Close()
			if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				return err
			}
			if err != nil && strings.HasPrefix(packMagic, string(head[:n])) {
				return nil // empty or short: a writer that just made it
			}
			return &notPack{filepath.Base(name), "is not an evidence pack"}
		}
		g.f, g.end, g.size = f, int64(len(packMagic)), -1
	}
	st, err := g.f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == g.size {
		return nil // nothing added since
	}
	g.size = st.Size()
	if !g.full {
		s.readIndex(g, g.size)
	}
	return s.scan(g, g.size)
}

// readIndex takes the index entries that start where the known entries
// end and fit in the segment; the first that does not ends the index's
// use (a crash can leave an index torn, or ahead of its segment).
func (s *store) readIndex(g *segment, size int64) {
	f, err := regular(segName(s.dir, g.num, segIndex))
	if err != nil {
		return
	}
	defer f.Close()
	if g.idx == 0 {
		head := make([]byte, len(indexMagic))
		if _, err := io.ReadFull(f, head); err != nil || string(head) != indexMagic {
			return
		}
		g.idx = int64(len(indexMagic))
		if st, err := f.Stat(); err == nil {
			// No more entries than the segment can hold, whatever
			// size the index claims (a sparse one claims any).
			s.idx.reserve(min((st.Size()-g.idx)/indexEntry, size/entryHead))
		}
	} else if _, err := f.Seek(g.idx, io.SeekStart); err != nil {
		return
	}
	r := bufio.NewReaderSize(f, 64<<10)
	ie := make([]byte, indexEntry)
	for {
		if _, err := io.ReadFull(r, ie); err != nil {
			return
		}
		var key [sha256.Size]byte
		copy(key[:], ie)
		off := int64(binary.BigEndian.Uint64(ie[sha256.Size:]))
		n := int64(binary.BigEndian.Uint64(ie[sha256.Size+8:]))
		if off != g.end || n < 0 || n > maxEntry || off+entryHead+n > size {
			return
		}
		s.add(key, loc{seg: g, off: off + entryHead, n: n})
		g.end = off + entryHead + n
		g.idx += indexEntry
		g.indexed = g.end
	}
}

// scan reads entry heads in g from its known end while whole entries
// follow: a head whose entry runs past the segment is a torn tail (or one
// being written), and ends the scan until the next refresh.
func (s *store) scan(g *segment, size int64) error {
	head := make([]byte, entryHead)
	for g.end+entryHead <= size {
		if _, err := g.f.ReadAt(head, g.end); err != nil {
			return err
		}
		n := int64(binary.BigEndian.Uint64(head[sha256.Size:]))
		var key [sha256.Size]byte
		copy(key[:], head)
		// No content hashes to all zeroes: that head is a hole or a
		// zeroed tail, not an entry (a sparse file would otherwise
		// read as millions of them).
		if n < 0 || n > maxEntry || g.end+entryHead+n > size || key == ([sha256.Size]byte{}) {
			// Damage, not a torn tail, when the index names a whole
			// entry further on: the entries from there are read, and
			// the bytes between are a gap a purge and verify name.
			next, ok := s.resume(g, size)
			if !ok {
				return nil
			}
			g.gaps = append(g.gaps, gap{g.end, next})
			g.end = next
			continue
		}
		s.add(key, loc{seg: g, off: g.end + entryHead, n: n})
		g.end += entryHead + n
	}
	return nil
}

// gap is bytes of a segment between whole entries that read as none.
type gap struct{ from, to int64 }

// resume finds the first entry past g.end that g's index names and whose
// head there says the same (its digest and length), whole in the
// segment.
func (s *store) resume(g *segment, size int64) (int64, bool) {
	f, err := regular(segName(s.dir, g.num, segIndex))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	head := make([]byte, len(indexMagic))
	if _, err := io.ReadFull(r, head); err != nil || string(head) != indexMagic {
		return 0, false
	}
	ie, at := make([]byte, indexEntry), make([]byte, entryHead)
	best := int64(-1)
	for {
		if _, err := io.ReadFull(r, ie); err != nil {
			return best, best > 0
		}
		off := int64(binary.BigEndian.Uint64(ie[sha256.Size:]))
		n := int64(binary.BigEndian.Uint64(ie[sha256.Size+8:]))
		if off <= g.end || n < 0 || n > maxEntry || off+entryHead+n > size || (best > 0 && off >= best) {
			continue
		}
		if _, err := g.f.ReadAt(at, off); err == nil && string(at) == string(append(ie[:sha256.Size:sha256.Size], ie[sha256.Size+8:]...)) {
			best = off
		}
	}
}
