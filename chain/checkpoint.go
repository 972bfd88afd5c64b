package chain

import (
	"bailiff/internal/jsontext"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

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

// KeyName is the name a private or public key was made for.
func KeyName(key string) string {
	name, _, _ := strings.Cut(strings.TrimPrefix(key, "PRIVATE+KEY+"), "+")
	return name
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

// wrongKey says whose key a checkpoint is signed with, when it is not the
// one given: by the signers' names, with key ids when a name is shared
// (two keys made for one log).
func wrongKey(v note.Verifier, sigs []note.Signature) error {
	id := func(name string, hash uint32) string { return fmt.Sprintf("%q (key id %08x)", name, hash) }
	var by []string
	for _, s := range sigs {
		by = append(by, id(s.Name, s.Hash))
	}
	if len(by) == 0 {
		return fmt.Errorf("%w %s: it holds no signature", ErrWrongKey, id(v.Name(), v.KeyHash()))
	}
	return fmt.Errorf("%w %s, but by %s", ErrWrongKey, id(v.Name(), v.KeyHash()), strings.Join(by, " and "))
}

// ErrWrongKey is a checkpoint not signed by the key it was opened with.
var ErrWrongKey = errors.New("the checkpoint is not signed by key")

// GenerateKey makes an Ed25519 key pair for signing checkpoints, in the
// sumdb/note text form: skey is secret, vkey is published. It refuses a
// name ValidKeyName refuses: note.GenerateKey would make the pair, and no
// signer could ever load it.
func GenerateKey(rand io.Reader, name string) (skey, vkey string, err error) {
	if err := ValidKeyName(name); err != nil {
		return "", "", err
	}
	return note.GenerateKey(rand, name)
}

// KeyNameRule is the rule key names follow, as sumdb/note's signers and
// verifiers enforce it.
const KeyNameRule = "a key name is non-empty UTF-8 without spaces or '+'"

// ErrKeyName is a name no note key can carry.
var ErrKeyName = errors.New(KeyNameRule)

// ValidKeyName reports whether name can name a note key.
func ValidKeyName(name string) error {
	if name == "" || !utf8.ValidString(name) || strings.IndexFunc(name, unicode.IsSpace) >= 0 || strings.Contains(name, "+") {
		return ErrKeyName
	}
	return nil
}

// The kinds of wrong key a KeyError reports; a caller tells them apart
// with errors.Is, and a CLI calls each a usage error, not a finding.
var (
	ErrPublicKey  = errors.New("is a public key, a private key is needed")
	ErrPrivateKey = errors.New("is a private key, a public key is needed")
	ErrNotKey     = errors.New("is not a key")
)

// KeyError is a key that cannot be used where it was given. Err is one of
// ErrPublicKey, ErrPrivateKey or ErrNotKey; Detail, if set, is why a text
// that looks like a key is still not one.
type KeyError struct {
	Err    error
	Detail string
}

func (e *KeyError) Error() string {
	if e.Detail != "" {
		return e.Err.Error() + ": " + e.Detail
	}
	return e.Err.Error()
}

func (e *KeyError) Unwrap() error { return e.Err }

// ParsePrivateKey checks that key is a private key in the note signer
// form (surrounding space removed) and returns it.
func ParsePrivateKey(key string) (string, error) {
	key = strings.TrimSpace(key)
	if _, err := note.NewSigner(key); err != nil {
		if _, verr := note.NewVerifier(key); verr == nil {
			return "", &KeyError{Err: ErrPublicKey}
		}
		if strings.HasPrefix(key, "PRIVATE+KEY+") {
			return "", &KeyError{Err: ErrNotKey, Detail: err.Error()}
		}
		return "", &KeyError{Err: ErrNotKey}
	}
	return key, nil
}

// ParsePublicKey checks that key is a public key in the note verifier
// form (surrounding space removed) and returns it.
func ParsePublicKey(key string) (string, error) {
	key = strings.TrimSpace(key)
	if _, err := note.NewVerifier(key); err != nil {
		if strings.HasPrefix(key, "PRIVATE+KEY+") {
			return "", &KeyError{Err: ErrPrivateKey}
		}
		return "", &KeyError{Err: ErrNotKey}
	}
	return key, nil
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

// CheckConsistency verifies a consistency proof between two checkpoints
// of the same log: the older one's records are the newer one's first
// records, unchanged.
func CheckConsistency(p tlog.TreeProof, older, newer Checkpoint) error {
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

// Bundle is a self-contained proof that one record is in a log: the
// record's line, its inclusion proof, and the signed checkpoint the proof
// is against. Anyone with the log's public key can check it, without the
// log.
type Bundle struct {
	Format     string   `json:"format"`
	Seq        int64    `json:"seq"`
	Record     string   `json:"record"`
	Proof      []string `json:"proof"`
	Checkpoint string   `json:"checkpoint"`
}

// BundleFormat names the bundle format version.
const BundleFormat = "bailiff-inclusion-proof/v1"

// NewBundle proves record seq against a signed checkpoint (whose size
// must be in the tree).
func (t *Tree) NewBundle(rec Record, signed []byte, c Checkpoint) (*Bundle, error) {
	root, err := t.Root(c.Size)
	if err != nil {
		return nil, err
	}
	if root != c.Root {
		return nil, errors.New("the checkpoint's root is not this log's: it was made for another log or the log was rewritten")
	}
	p, err := t.ProveInclusion(rec.Seq, c.Size)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Format: BundleFormat, Seq: rec.Seq, Record: string(rec.Line()), Checkpoint: string(signed), Proof: []string{}}
	for _, h := range p {
		b.Proof = append(b.Proof, base64.StdEncoding.EncodeToString(h[:]))
	}
	return b, nil
}

// ParseBundle reads a bundle's JSON strictly.
func ParseBundle(data []byte) (*Bundle, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var b Bundle
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("proof bundle: %v", jsontext.PlainJSON(err, "a bundle has only format, seq, record, checkpoint and proof"))
	}
	if dec.More() {
		return nil, errors.New("proof bundle: trailing data")
	}
	if b.Format != BundleFormat {
		return nil, fmt.Errorf("proof bundle format %q is not %s", b.Format, BundleFormat)
	}
	return &b, nil
}

// VerifyBundle checks a bundle with the log's public key: the checkpoint's
// signature, the record's own hash and seq, and the inclusion proof. It
// returns the record and the checkpoint it was proved against.
func VerifyBundle(b *Bundle, vkey string) (Record, Checkpoint, error) {
	c, err := OpenCheckpoint([]byte(b.Checkpoint), vkey)
	if err != nil {
		return Record{}, c, err
	}
	rec, err := Parse([]byte(b.Record))
	if err != nil {
		return rec, c, fmt.Errorf("record: %v", err)
	}
	if rec.Seq != b.Seq {
		return rec, c, fmt.Errorf("bundle names record %d but holds record %d", b.Seq, rec.Seq)
	}
	var p tlog.RecordProof
	for i, s := range b.Proof {
		raw, err := base64.StdEncoding.Strict().DecodeString(s)
		if err != nil || len(raw) != tlog.HashSize {
			return rec, c, fmt.Errorf("proof hash %d is not a base64 SHA-256 hash", i)
		}
		var h tlog.Hash
		copy(h[:], raw)
		p = append(p, h)
	}
	if rec.Seq >= c.Size {
		return rec, c, fmt.Errorf("record %d is beyond the checkpoint's %d records", rec.Seq, c.Size)
	}
	if err := tlog.CheckRecord(p, c.Size, c.Root, rec.Seq, rec.Leaf()); err != nil {
		return rec, c, fmt.Errorf("record %d is not in the checkpointed log: %v", rec.Seq, err)
	}
	return rec, c, nil
}

// CheckpointBody is a signed checkpoint written into the log: Note is the
// signed note over the tree of the Size records before this one.
type CheckpointBody struct {
	Note string `json:"note"`
}
