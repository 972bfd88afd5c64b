package chain

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Checkpoint is a commitment to the first Size records of a log: the
// Merkle root of their leaves. Its text form (the body of a signed note,
// as in the C2SP tlog-checkpoint format) is exactly
//
//	<origin>\n<size>\n<base64 root>\n
//
// where origin names the log (bailiff uses the signing key's name), size
// is decimal without leading zeros and root is standard base64 with
// padding. Extension lines are not accepted.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
}

// Text is the checkpoint's canonical text.
func (c Checkpoint) Text() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Root[:]))
}

// ParseCheckpoint reads a checkpoint's text, refusing anything but the
// canonical form.
func ParseCheckpoint(text []byte) (Checkpoint, error) {
	var c Checkpoint
	lines := strings.Split(string(text), "\n")
	if len(lines) != 4 || lines[3] != "" {
		return c, errors.New("checkpoint must be exactly three lines: origin, size, root")
	}
	if lines[0] == "" || strings.TrimSpace(lines[0]) != lines[0] {
		return c, errors.New("checkpoint origin is empty or has surrounding space")
	}
	c.Origin = lines[0]
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != lines[1] {
		return c, fmt.Errorf("checkpoint size %q is not a canonical decimal", lines[1])
	}
	c.Size = n
	root, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(root) != len(c.Root) {
		return c, fmt.Errorf("checkpoint root %q is not a base64 SHA-256 hash", lines[2])
	}
	copy(c.Root[:], root)
	if c.Text() != string(text) {
		return c, errors.New("checkpoint is not in canonical form")
	}
	return c, nil
}

// SignCheckpoint signs c as a note with the private key skey (as made by
// GenerateKey). The checkpoint's origin must be the key's name.
func SignCheckpoint(c Checkpoint, skey string) ([]byte, error) {
	s, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("signing key: %v", err)
	}
	if c.Origin == "" {
		c.Origin = s.Name()
	}
	if c.Origin != s.Name() {
		return nil, fmt.Errorf("checkpoint origin %q is not the key's name %q", c.Origin, s.Name())
	}
	return note.Sign(&note.Note{Text: c.Text()}, s)
}

// OpenCheckpoint verifies a signed checkpoint note with the public key
// vkey and returns the checkpoint. The origin must be the key's name, so
// a checkpoint of one log cannot pass for another's.
func OpenCheckpoint(msg []byte, vkey string) (Checkpoint, error) {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("public key: %v", err)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	var un *note.UnverifiedNoteError
	if errors.As(err, &un) {
		return Checkpoint{}, wrongKey(v, un.Note.UnverifiedSigs)
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint signature: %v", err)
	}
	c, err := ParseCheckpoint([]byte(n.Text))
	if err != nil {
		return c, err
	}
	if c.Origin != v.Name() {
		return c, fmt.Errorf("checkpoint is for log %q, not %q", c.Origin, v.Name())
	}
	return c, nil
}

// hashes holds every stored hash of a tree, as tlog lays them out, so
// proofs can be computed for any size up to the whole log.
type hashes []tlog.Hash

func (h hashes) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		if x < 0 || x >= int64(len(h)) {
			return nil, fmt.Errorf("hash index %d out of range", x)
		}
		out[i] = h[x]
	}
	return out, nil
}

// Tree is the Merkle tree of a whole log, held in memory (two hashes per
// record) for proving. Verification never needs it: Frontier suffices.
type Tree struct {
	n      int64
	stored hashes
}

// ReadTree reads a log, checking its integrity, and builds its tree.
func ReadTree(r io.Reader) (*Tree, []Record, error) {
	t := &Tree{}
	var recs []Record
	rd := NewReader(r)
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return t, recs, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if err := t.add(rec.Leaf()); err != nil {
			return nil, nil, err
		}
		recs = append(recs, rec)
	}
}

func (t *Tree) add(leaf tlog.Hash) error {
	hs, err := tlog.StoredHashesForRecordHash(t.n, leaf, t.stored)
	if err != nil {
		return err
	}
	t.stored = append(t.stored, hs...)
	t.n++
	return nil
}

// Size is the number of records in the tree.
func (t *Tree) Size() int64 { return t.n }

// Root is the Merkle root of the first n records.
func (t *Tree) Root(n int64) (tlog.Hash, error) {
	if n < 0 || n > t.n {
		return tlog.Hash{}, fmt.Errorf("the log has %d records, not %d", t.n, n)
	}
	return tlog.TreeHash(n, t.stored)
}

// ProveInclusion proves that record seq is in the tree of the first size
// records.
func (t *Tree) ProveInclusion(seq, size int64) (tlog.RecordProof, error) {
	if size > t.n || seq < 0 || seq >= size {
		return nil, fmt.Errorf("record %d is not among the first %d of %d records", seq, size, t.n)
	}
	return tlog.ProveRecord(size, seq, t.stored)
}

// ProveConsistency proves that the tree of the first old records is a
// prefix of the tree of the first size records.
func (t *Tree) ProveConsistency(old, size int64) (tlog.TreeProof, error) {
	if old < 0 || old > size || size > t.n {
		return nil, fmt.Errorf("cannot prove %d records consistent with %d of %d", old, size, t.n)
	}
	if old == 0 {
		return tlog.TreeProof{}, nil // the empty tree is a prefix of every tree
	}
	return tlog.ProveTree(size, old, t.stored)
}

// checkConsistency verifies a consistency proof between two checkpoints
// of the same log: the older one's records are the newer one's first
// records, unchanged.
func checkConsistency(p tlog.TreeProof, older, newer Checkpoint) error {
	if older.Origin != newer.Origin {
		return fmt.Errorf("checkpoints are of different logs (%q, %q)", older.Origin, newer.Origin)
	}
	if older.Size > newer.Size {
		return fmt.Errorf("older checkpoint has more records (%d) than the newer (%d)", older.Size, newer.Size)
	}
	if older.Size == 0 {
		var empty Frontier
		if len(p) != 0 || older.Root != empty.Root() {
			return errors.New("a checkpoint of no records must have the empty tree's root and an empty proof")
		}
		return nil
	}
	return tlog.CheckTree(p, newer.Size, newer.Root, older.Size, older.Root)
}

// CheckpointBody is a signed checkpoint written into the log: Note is the
// signed note over the tree of the Size records before this one.
type CheckpointBody struct {
	Note string `json:"note"`
}
