package chain

import (
	"bufio"
	"bytes"
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
// segment it created, so a torn tail is always a segment's last bytes and
// never has a later entry behind it.
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
	num  int
	f    *os.File // open for reading (and, for the writer, appending)
	end  int64    // entries are known up to here
	idx  int64    // bytes of the index read
	bad  error    // why the segment cannot be read, if it cannot
	full bool     // rescanned from its start, its index ignored

	sync    sync.Mutex // held while the segment is synced
	durable int64      // synced up to here
	named   bool       // its name and the store's synced too
	syncErr error      // a sync failed: nothing more of it is durable
	// syncFailed says so without waiting for the sync lock.
	syncFailed atomic.Bool
}

// store is the packs of one evidence directory as this process knows
// them. It is loaded on first use and refreshed when a content is asked
// for that it does not know, since another process may be writing.
type store struct {
	dir string

	mu     sync.RWMutex
	loaded bool
	segs   []*segment
	at     map[[sha256.Size]byte]loc   // the latest entry of each content
	extra  map[[sha256.Size]byte][]loc // earlier entries of the same content
	purged map[[sha256.Size]byte]bool
	pread  int64 // bytes of the purge marks read
	w      *packWriter
}

func newStore(dir string) *store {
	return &store{dir: dir, at: map[[sha256.Size]byte]loc{}, extra: map[[sha256.Size]byte][]loc{},
		purged: map[[sha256.Size]byte]bool{}}
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
		if n, err := strconv.Atoi(name); ok && err == nil && n > 0 && len(name) >= segDigits {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	return nums, nil
}

// refresh brings the store up to what is on disk: new segments, index
// entries and segment tails, and purge marks. Called with mu held.
func (s *store) refresh() error {
	if !s.loaded {
		nums, err := segNums(s.dir)
		if err != nil {
			return err
		}
		for _, n := range nums {
			s.segs = append(s.segs, &segment{num: n})
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
			s.segs = append(s.segs, &segment{num: next})
		}
	}
	for _, g := range s.segs {
		if g.bad == nil && (s.w == nil || g != s.w.seg) {
			g.bad = s.catchUp(g)
		}
	}
	return s.readPurged()
}

// catchUp reads what was added to g since it was last read: index entries
// that continue the known entries, then entries in the segment past them.
func (s *store) catchUp(g *segment) error {
	if g.f == nil {
		f, err := os.Open(segName(s.dir, g.num, segData))
		if err != nil {
			return err
		}
		head := make([]byte, len(packMagic))
		if _, err := io.ReadFull(f, head); err != nil || string(head) != packMagic {
			f.Close()
			if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				// Empty or short: a writer that just made it.
				if st, serr := os.Stat(segName(s.dir, g.num, segData)); serr == nil && st.Size() < int64(len(packMagic)) && strings.HasPrefix(packMagic, string(head[:st.Size()])) {
					return nil
				}
				return fmt.Errorf("%s is not an evidence pack", filepath.Base(segName(s.dir, g.num, segData)))
			}
			return err
		}
		g.f, g.end = f, int64(len(packMagic))
	}
	st, err := g.f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if !g.full {
		s.readIndex(g, size)
	}
	return s.scan(g, size)
}

// readIndex takes the index entries that start where the known entries
// end and fit in the segment; the first that does not ends the index's
// use (a crash can leave an index torn, or ahead of its segment).
func (s *store) readIndex(g *segment, size int64) {
	f, err := os.Open(segName(s.dir, g.num, segIndex))
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
		if st, err := f.Stat(); err == nil && len(s.at) == 0 {
			// Sized once, so loading a large store does not grow
			// (and copy) the map a step at a time.
			s.at = make(map[[sha256.Size]byte]loc, (st.Size()-g.idx)/indexEntry)
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
		if n < 0 || n > maxEntry || g.end+entryHead+n > size {
			return nil
		}
		var key [sha256.Size]byte
		copy(key[:], head)
		s.add(key, loc{seg: g, off: g.end + entryHead, n: n})
		g.end += entryHead + n
	}
	return nil
}

func (s *store) add(key [sha256.Size]byte, l loc) {
	if old, ok := s.at[key]; ok {
		s.extra[key] = append(s.extra[key], old)
	}
	s.at[key] = l
}

// rebuild forgets g's entries and reads its segment from the start, its
// index ignored: the index named an entry the segment does not hold.
func (s *store) rebuild(g *segment) {
	for k, l := range s.at {
		if l.seg == g {
			delete(s.at, k)
		}
	}
	for k, ls := range s.extra {
		kept := ls[:0]
		for _, l := range ls {
			if l.seg != g {
				kept = append(kept, l)
			}
		}
		s.extra[k] = kept
	}
	g.full, g.end = true, int64(len(packMagic))
	if g.f == nil {
		return
	}
	st, err := g.f.Stat()
	if err == nil {
		err = s.scan(g, st.Size())
	}
	g.bad = err
}

// readFrom reads name from off to its end ("" and no error when absent).
func readFrom(name string, off int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// readPurged reads the purge marks added since the last read; a torn
// last line waits for the rest of it.
func (s *store) readPurged() error {
	data, err := readFrom(filepath.Join(s.dir, purgedName), s.pread)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for {
		line, rest, ok := bytes.Cut(data, []byte{'\n'})
		if !ok {
			return nil
		}
		s.pread += int64(len(line)) + 1
		data = rest
		if key, ok := parseDigest(string(line)); ok {
			s.purged[key] = true
		}
	}
}

// parseDigest reads "sha256:<64 lower-case hex>".
func parseDigest(d string) ([sha256.Size]byte, bool) {
	var key [sha256.Size]byte
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 2*sha256.Size || strings.Trim(h, "0123456789abcdef") != "" {
		return key, false
	}
	for i := range key {
		v, _ := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		key[i] = byte(v)
	}
	return key, true
}

// lookup finds key, refreshing once from disk when it is not known.
func (s *store) lookup(key [sha256.Size]byte) (loc, bool, error) {
	s.mu.RLock()
	l, ok := s.at[key]
	loaded := s.loaded
	s.mu.RUnlock()
	if ok && loaded {
		return l, true, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.refresh()
	l, ok = s.at[key]
	return l, ok, err
}

// read returns the bytes of the entry at l, and whether its head names
// key: an index that points at another entry is rebuilt from its
// segment, and the read tried again.
func (s *store) read(key [sha256.Size]byte, l loc) ([]byte, bool, error) {
	buf := make([]byte, entryHead+l.n)
	if _, err := l.seg.f.ReadAt(buf, l.off-entryHead); err != nil {
		return nil, false, err
	}
	if !bytes.Equal(buf[:sha256.Size], key[:]) || int64(binary.BigEndian.Uint64(buf[sha256.Size:])) != l.n {
		return nil, false, nil
	}
	return buf[entryHead:], true, nil
}
