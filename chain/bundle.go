package chain

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"bailiff/internal/jsontext"

	"golang.org/x/mod/sumdb/tlog"
)

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

// bundleFormat names the bundle format version.
const bundleFormat = "bailiff-inclusion-proof/v1"

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
	b := &Bundle{Format: bundleFormat, Seq: rec.Seq, Record: string(rec.Line()), Checkpoint: string(signed), Proof: []string{}}
	for _, h := range p {
		b.Proof = append(b.Proof, base64.StdEncoding.EncodeToString(h[:]))
	}
	return b, nil
}

// ParseBundle reads a bundle's JSON strictly.
func ParseBundle(data []byte) (*Bundle, error) {
	if err := jsontext.NoDuplicateKeys(data); err != nil {
		return nil, fmt.Errorf("proof bundle: %v", err)
	}
	if err := jsontext.ExactFieldCase(data, &Bundle{}); err != nil {
		return nil, fmt.Errorf("proof bundle: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var b Bundle
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("proof bundle: %v", jsontext.PlainJSON(err, "a bundle has only format, seq, record, checkpoint and proof"))
	}
	if dec.More() {
		return nil, errors.New("proof bundle: trailing data")
	}
	if b.Format != bundleFormat {
		return nil, fmt.Errorf("proof bundle format %q is not %s", b.Format, bundleFormat)
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
