package chain

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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
// chain. A file is named by the hex SHA-256 of its bytes.
type Evidence struct {
	Dir string
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
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (e Evidence) path(digest string) (string, error) {
	hexd, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hexd) != 64 || strings.Trim(hexd, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%q is not a sha256 digest", digest)
	}
	return filepath.Join(e.Dir, hexd), nil
}

// Put stores data and returns its digest. The file is written to a temp
// name, synced when sync is set, and renamed, so a reader never sees part
// of it.
func (e Evidence) Put(data []byte, sync bool) (string, error) {
	d := Digest(data)
	p, _ := e.path(d)
	if _, err := os.Stat(p); err == nil {
		return d, nil
	}
	_, statErr := os.Stat(e.Dir)
	if err := os.MkdirAll(e.Dir, 0o700); err != nil {
		return "", err
	}
	if sync && statErr != nil {
		// A store made now is itself a new name, in the log's directory.
		if err := syncDir(filepath.Dir(e.Dir)); err != nil {
			return "", err
		}
	}
	tmp, err := os.CreateTemp(e.Dir, ".put-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", err
	}
	if sync {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return "", err
		}
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return "", err
	}
	if sync {
		// The file's bytes are on disk, but its name is an entry in the
		// directory: without syncing that too, a crash can keep a later
		// synced record that names the content and lose the file.
		if err := syncDir(e.Dir); err != nil {
			// Left in place, the file would make the next Put of the
			// same content return at once, unsynced.
			os.Remove(p)
			return "", err
		}
	}
	return d, nil
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
	p, err := e.path(digest)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(p + purgedSuffix); err == nil {
			return nil, ErrPurged
		}
		return nil, ErrMissing
	}
	if err != nil {
		return nil, err
	}
	if got := Digest(data); got != digest {
		return data, &EvidenceError{Digest: digest, Got: got}
	}
	return data, nil
}

// Remove purges the content stored under digest, leaving the mark that
// tells purged content from lost content. Removing what is not there is
// not an error.
func (e Evidence) Remove(digest string) error {
	if err := e.MarkPurged(digest); err != nil {
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
	p, err := e.path(digest)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(e.Dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(p+purgedSuffix, nil, 0o600)
}

// Has reports whether the store holds the content under digest.
func (e Evidence) Has(digest string) bool {
	p, err := e.path(digest)
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}

// Purged reports whether the store holds the purge mark for digest.
func (e Evidence) Purged(digest string) bool {
	p, err := e.path(digest)
	if err != nil {
		return false
	}
	_, err = os.Stat(p + purgedSuffix)
	return err == nil
}

// CopyTo copies the content stored under digest into another store,
// linking the file where the filesystem allows. Content that was purged
// is copied as its purge mark; content not present otherwise is skipped.
func (e Evidence) CopyTo(dst Evidence, digest string) error {
	src, err := e.path(digest)
	if err != nil {
		return err
	}
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) && e.Purged(digest) {
		return dst.MarkPurged(digest)
	}
	to, _ := dst.path(digest)
	if err := os.MkdirAll(dst.Dir, 0o700); err != nil {
		return err
	}
	if err := os.Link(src, to); err == nil || errors.Is(err, fs.ErrExist) {
		return nil
	} else if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
