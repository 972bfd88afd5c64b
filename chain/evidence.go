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
	"strings"
)

// Evidence is the content-addressed store beside a log that holds the
// content of tool results. The log holds only each content's digest, so
// content can be purged (for privacy or retention) without breaking the
// chain. A file is named by the hex SHA-256 of its bytes.
type Evidence struct {
	Dir string
}

// EvidenceDir is where the evidence of the log at name lives.
func EvidenceDir(name string) string { return name + ".evidence" }

// ErrPurged is returned by Get for content that is not in the store.
var ErrPurged = errors.New("evidence was purged")

// EvidenceError is content whose bytes do not have the digest it is
// stored under: it was altered.
type EvidenceError struct {
	Digest string
	Got    string
}

func (e *EvidenceError) Error() string {
	return fmt.Sprintf("evidence %s does not match its digest (its bytes hash to %s)", e.Digest, e.Got)
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
	if err := os.MkdirAll(e.Dir, 0o700); err != nil {
		return "", err
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
	return d, os.Rename(tmp.Name(), p)
}

// Get returns the content stored under digest: ErrPurged when it is not
// there, an *EvidenceError when its bytes do not match.
func (e Evidence) Get(digest string) ([]byte, error) {
	p, err := e.path(digest)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrPurged
	}
	if err != nil {
		return nil, err
	}
	if got := Digest(data); got != digest {
		return data, &EvidenceError{Digest: digest, Got: got}
	}
	return data, nil
}

// Remove purges the content stored under digest. Removing what is not
// there is not an error.
func (e Evidence) Remove(digest string) error {
	p, err := e.path(digest)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// CopyTo copies the content stored under digest into another store,
// linking the file where the filesystem allows. Content not present is
// skipped.
func (e Evidence) CopyTo(dst Evidence, digest string) error {
	src, err := e.path(digest)
	if err != nil {
		return err
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
