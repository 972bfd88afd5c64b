package chain

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Packed is what Pack did to a store written before packs.
type Packed struct {
	Contents int   // files moved into a pack
	Bytes    int64 // their bytes
	Altered  int   // of them, files whose bytes are not their name's: kept as they are
	Marks    int   // purge marks moved into the store's list
	Dropped  int   // files of content marked purged, removed as the purge meant
	Temps    int   // half-written files of a crashed writer, removed
	// Strange are files that are neither content nor marks, left as
	// they are.
	Strange []string
}

// Pack moves a store's per-file content and purge marks into a pack of
// its own, then removes the files. The pack is synced first, so a crash
// leaves every content in the files, in the pack, or both (and Pack run
// again finishes). Altered content is kept as it is, under the digest its
// file claims, so verify still finds it altered; content whose purge mark
// is there too is removed, not packed. Files that are neither content nor
// marks are left alone, and listed.
func (e Evidence) Pack() (Packed, error) {
	var done Packed
	if e.s == nil {
		return done, errors.New("pack needs a store from OpenEvidence")
	}
	ents, err := os.ReadDir(e.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return done, err
	}
	marked := map[string]bool{}
	for _, f := range ents {
		if hexd, ok := strings.CutSuffix(f.Name(), purgedSuffix); ok && f.Type().IsRegular() {
			marked[hexd] = true
		}
	}
	var gone []string
	for _, f := range ents {
		name := f.Name()
		hexd, mark := strings.CutSuffix(name, purgedSuffix)
		key, ok := ParseDigest("sha256:" + hexd)
		switch {
		case ok && f.Type().IsRegular() && !mark && marked[hexd]:
			// A purge that stopped between its mark and the removal:
			// finish it rather than keep the content.
			done.Dropped++
		case ok && f.Type().IsRegular() && mark:
			if err := e.store().markPurged(key); err != nil {
				return done, err
			}
			done.Marks++
		case ok && f.Type().IsRegular():
			data, err := os.ReadFile(filepath.Join(e.Dir, name))
			if err != nil {
				return done, err
			}
			if Digest(data) != "sha256:"+hexd {
				done.Altered++
			}
			if err := e.store().put(key, data, false); err != nil {
				return done, err
			}
			done.Contents++
			done.Bytes += int64(len(data))
		case strings.HasPrefix(name, ".put-"):
			done.Temps++
		case name == purgedName || isSegment(name):
			continue
		default:
			done.Strange = append(done.Strange, name)
			continue
		}
		gone = append(gone, name)
	}
	if err := e.Close(); err != nil {
		return done, err
	}
	if err := syncDir(e.Dir); err != nil {
		return done, err
	}
	for _, name := range gone {
		if err := os.Remove(filepath.Join(e.Dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return done, err
		}
	}
	if err := syncDir(e.Dir); err != nil {
		return done, err
	}
	sort.Strings(done.Strange)
	return done, nil
}

func isSegment(name string) bool {
	rest, ok := strings.CutPrefix(name, segPrefix)
	return ok && (strings.HasSuffix(rest, segData) || strings.HasSuffix(rest, segIndex))
}

// Digests lists the contents the store holds, bytes that hash to their
// digest, sorted: what a copy of the store must hold to read the same.
func (e Evidence) Digests() ([]string, error) {
	s := e.store()
	s.mu.Lock()
	err := s.refresh()
	var out []string
	var keys [][sha256.Size]byte
	for _, p := range s.idx.latest() {
		if k, ok := s.headKey(p); ok {
			keys = append(keys, k)
		}
	}
	s.mu.Unlock()
	for _, k := range keys {
		if d := fmt.Sprintf("sha256:%x", k[:]); e.Has(d) {
			out = append(out, d)
		}
	}
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(e.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, f := range ents {
		if d := "sha256:" + f.Name(); f.Type().IsRegular() {
			if _, ok := ParseDigest(d); ok && e.Has(d) {
				out = append(out, d)
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}
