package chain

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// EvidenceStore is where the content a log's records refer to is kept, by
// digest, as tlog keeps hashes behind its HashReader: what writes a log
// puts content, what reads one back gets it. Get returns ErrPurged for
// content a purge removed, ErrMissing for content lost otherwise, and an
// *EvidenceError for bytes that are not the digest's. The directory store
// beside a log (Evidence) is one.
type EvidenceStore interface {
	Put(data []byte, sync bool) (digest string, err error)
	Get(digest string) ([]byte, error)
}

// Evidence is the content-addressed store beside a log that holds the
// content of tool results. The log holds only each content's digest, so
// content can be purged (for privacy or retention) without breaking the
// chain. Content is kept in packs (pack.go); a store written before packs,
// one file per content named by the hex SHA-256 of its bytes, is still
// read, and `bailiff repair --pack` converts it.
//
// Open one with OpenEvidence and use it for the whole of a read or a
// write: it keeps what it learned of the packs, and a writer appends to
// one segment of its own. An Evidence made as a literal reads (the packs
// anew on every call), and refuses Put.
type Evidence struct {
	Dir string
	s   *store
}

// OpenEvidence is the store in dir. Nothing is read until it is used.
func OpenEvidence(dir string) Evidence {
	return Evidence{Dir: dir, s: newStore(dir)}
}

func (e Evidence) store() *store {
	if e.s != nil {
		return e.s
	}
	return newStore(e.Dir)
}

// Close syncs and closes what this store wrote. It may be used after,
// and writes to a new segment then.
func (e Evidence) Close() error {
	if e.s == nil {
		return nil
	}
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	if e.s.w == nil {
		return nil
	}
	return e.s.closeWriter()
}

// Absent says the store is not there at all (no directory): a log copied
// without its store, not one whose content was lost piece by piece.
func (e Evidence) Absent() bool {
	_, err := os.Stat(e.Dir)
	return err != nil
}

// EvidenceDir is where the evidence of the log at name lives.
func EvidenceDir(name string) string { return name + ".evidence" }

// ErrPurged is returned by Get for content a purge removed: the store
// keeps a mark (the digest's file name plus ".purged") for it.
var ErrPurged = errors.New("evidence was purged")

// ErrMissing is returned by Get for content that is not in the store and
// was never purged from it: it was lost or deleted by hand.
var ErrMissing = errors.New("evidence is missing")

// purgedSuffix names the mark a purge leaves for content it removed.
const purgedSuffix = ".purged"

// EvidenceError is content whose bytes do not have the digest it is
// stored under: it was altered.
type EvidenceError struct {
	Digest string
	Got    string
}

func (e *EvidenceError) Error() string {
	return fmt.Sprintf("evidence %s was altered: its bytes hash to %s", e.Digest, e.Got)
}

// Digest is the digest under which data is stored: "sha256:<hex>".
func Digest(data []byte) string {
	return DigestOf(sha256.Sum256(data))
}

func (e Evidence) path(digest string) (string, error) {
	hexd, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hexd) != 64 || strings.Trim(hexd, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%q is not a sha256 digest", digest)
	}
	return filepath.Join(e.Dir, hexd), nil
}

// Put stores data and returns its digest. With sync, its entry is on
// disk when Put returns, and so are the names that lead to it. The store
// must come from OpenEvidence: one made as a literal would start a
// segment on every Put.
func (e Evidence) Put(data []byte, sync bool) (string, error) {
	if e.s == nil {
		return "", errors.New("evidence: Put needs a store from OpenEvidence")
	}
	key := sha256.Sum256(data)
	if err := e.s.put(key, data, sync); err != nil {
		return "", err
	}
	return DigestOf(key), nil
}

// syncDir syncs a directory's entries; a variable so a test can see it
// called in its place.
var syncDir = func(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // a directory cannot be opened for syncing there; NTFS journals renames
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Get returns the content stored under digest: ErrPurged when a purge
// removed it, ErrMissing when it is not there otherwise (or the store
// itself is absent), an *EvidenceError when its bytes do not match.
func (e Evidence) Get(digest string) ([]byte, error) {
	key, ok := ParseDigest(digest)
	if !ok {
		return nil, fmt.Errorf("%q is not a sha256 digest", digest)
	}
	s := e.store()
	// The packs as loaded, then a file of a store from before packs,
	// then the packs again with what was added since: a store being
	// converted, or one a writer appends to, is read with no refresh for
	// each content in the files.
	data, found, err := s.get(key, false)
	if !found && err == nil {
		data, found, err = e.getFile(digest)
	}
	if !found && err == nil {
		data, found, err = s.get(key, true)
	}
	if err != nil {
		return nil, err
	}
	if found && sha256.Sum256(data) == key {
		// Even if marked purged: stored again after its purge, or a
		// purge that did not finish.
		return data, nil
	}
	if found {
		if s.win != nil {
			// Bytes that do not hash to their digest may be a window's
			// that the disk no longer holds: read them from the disk.
			s.forget()
			if again, ok, err := s.get(key, true); err == nil && ok {
				if sha256.Sum256(again) == key {
					return again, nil
				}
				data = again
			}
		}
		if good, ok := s.good(key); ok {
			return good, nil
		}
		if good, ok, _ := e.getFile(digest); ok && sha256.Sum256(good) == key {
			return good, nil
		}
	}
	switch {
	case e.purged(s, key, digest):
		return nil, ErrPurged
	case found:
		return data, &EvidenceError{Digest: digest, Got: Digest(data)}
	}
	if err := s.problem(); err != nil {
		return nil, fmt.Errorf("evidence %s is not in the packs that can be read: %v", digest, err)
	}
	return nil, ErrMissing
}

// getFile reads the content from a store written before packs. Only a
// regular file is read: a FIFO would block, a device never end.
func (e Evidence) getFile(digest string) ([]byte, bool, error) {
	p, _ := e.path(digest)
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !st.Mode().IsRegular() {
		return nil, false, fmt.Errorf("evidence %s is not a regular file", filepath.Base(p))
	}
	data, err := os.ReadFile(p)
	return data, err == nil, err
}

func (e Evidence) purged(s *store, key [sha256.Size]byte, digest string) bool {
	if s.isPurged(key) {
		return true
	}
	p, _ := e.path(digest)
	_, err := os.Stat(p + purgedSuffix)
	return err == nil
}

// Remove purges the content stored under digest: the purge mark first,
// then the bytes, so a crash between leaves content marked purged whose
// bytes a second purge removes. Removing what is not there is not an
// error.
func (e Evidence) Remove(digest string) error {
	key, ok := ParseDigest(digest)
	if !ok {
		return fmt.Errorf("%q is not a sha256 digest", digest)
	}
	s := e.store()
	// Its bytes, while they can still be read, to find copies of it
	// where no entry can be read.
	data, err := e.Get(digest)
	if err != nil {
		data = nil
	}
	if err := s.markPurged(key); err != nil {
		return err
	}
	if err := s.wipe(key, data); err != nil {
		return err
	}
	p, _ := e.path(digest)
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// MarkPurged records that the content under digest was purged, without
// touching the content itself.
func (e Evidence) MarkPurged(digest string) error {
	key, ok := ParseDigest(digest)
	if !ok {
		return fmt.Errorf("%q is not a sha256 digest", digest)
	}
	return e.store().markPurged(key)
}

// Has reports whether the store holds the content under digest, bytes
// that hash to it.
func (e Evidence) Has(digest string) bool {
	_, err := e.Get(digest)
	return err == nil
}

// Purged reports whether the store holds the purge mark for digest.
func (e Evidence) Purged(digest string) bool {
	key, ok := ParseDigest(digest)
	if !ok {
		return false
	}
	s := e.store()
	s.mu.Lock()
	err := s.refresh()
	s.mu.Unlock()
	return err == nil && e.purged(s, key, digest)
}

// CopyTo copies the content stored under digest into another store.
// Content that was purged is copied as its purge mark, altered content as
// it is (under the digest it claims, so the copy shows the alteration
// too); content not present otherwise is skipped.
func (e Evidence) CopyTo(dst Evidence, digest string) error {
	data, err := e.Get(digest)
	var ee *EvidenceError
	switch {
	case errors.Is(err, ErrPurged):
		return dst.MarkPurged(digest)
	case errors.Is(err, ErrMissing):
		return nil
	case errors.As(err, &ee), err == nil:
		key, _ := ParseDigest(digest)
		return dst.store().put(key, data, false)
	}
	return err
}
