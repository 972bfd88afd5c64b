// Package chain reads and writes bailiff's audit log: an append-only file
// of JSON lines, each record linked to the one before it by a SHA-256
// hash, with signed checkpoints over an RFC 6962 Merkle tree of the
// records (the transparency-log construction of golang.org/x/mod/sumdb/tlog,
// signed as golang.org/x/mod/sumdb/note notes).
//
// # Record format (version 1)
//
// A log is a sequence of lines, each ending in "\n". A line is one record:
//
//	{"v":1,"seq":S,"ts":"T","session":N,"kind":"K"[,BODY],"prev":"P","hash":"H"}
//
// byte for byte in that order, where
//
//   - S is the record's position, decimal without leading zeros, 0 for the
//     first record and one more for each record after it;
//   - T is the time in UTC as 2006-01-02T15:04:05.000000000Z (always nine
//     fraction digits, so equal instants have equal bytes);
//   - N is the session id as a JSON string;
//   - K is the record kind: session, tools, call, grant, result, end or
//     checkpoint;
//   - BODY is the kind's fields (see the *Body types) as Go's encoding/json
//     writes them with HTML escaping off, without the enclosing braces, and
//     left out (with its comma) when the kind has no fields to write;
//   - P is the lower-case hex hash of the previous record, 64 zeros for
//     the first;
//   - H is the lower-case hex SHA-256 of every byte of the line before
//     `,"hash":"`. Because hash is always last, the hashed bytes are the
//     exact stored bytes, never a re-marshalled struct.
//
// Parsers accept only this canonical form, so one set of values has
// exactly one encoding and one hash: Parse refuses a line whose frame
// (everything but BODY) is not byte for byte what the writer writes, and
// DecodeBody refuses a body that is not (unknown or repeated keys, another
// order, other escapes).
//
// The Merkle leaf of a record is the RFC 6962 leaf hash of its 32-byte
// record hash (tlog.RecordHash(H)): H already commits to every other byte.
//
// Versioning rule: a change that makes an old reader misread a record
// (a new required field, a changed meaning) increments "v"; readers refuse
// versions they do not know. New kinds and new optional body fields do not
// change the version, and old readers refuse them as unknown.
//
// Start with Parse for one line, Reader for a file, Writer to append, and
// VerifyIntegrity for the fast hash-only check of a whole file.
package chain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// Version is the record format version this package writes and reads.
const Version = 1

// TimeFormat is the only accepted form of a record's ts.
const TimeFormat = "2006-01-02T15:04:05.000000000Z"

// Kind is a record kind.
type Kind string

// The record kinds.
const (
	KindSession    Kind = "session"
	KindTools      Kind = "tools"
	KindCall       Kind = "call"
	KindGrant      Kind = "grant"
	KindResult     Kind = "result"
	KindEnd        Kind = "end"
	KindCheckpoint Kind = "checkpoint"
)

func knownKind(k Kind) bool {
	switch k {
	case KindSession, KindTools, KindCall, KindGrant, KindResult, KindEnd, KindCheckpoint:
		return true
	}
	return false
}

// Record is one parsed line of the log.
type Record struct {
	Seq     int64
	TS      time.Time
	Session string
	Kind    Kind
	// Body is the kind's fields as a JSON object ("{}" when there are
	// none). Decode it with DecodeBody.
	Body json.RawMessage
	Prev tlog.Hash
	Hash tlog.Hash
}

const (
	linePrefix = `{"v":1,"seq":`
	prevKey    = `,"prev":"`
	hashKey    = `","hash":"`
	// suffixLen is the length of `,"prev":"<64 hex>","hash":"<64 hex>"}`,
	// which ends every line.
	suffixLen = len(prevKey) + 64 + len(hashKey) + 64 + 2
	// hashedTail is how much of the line's end is not hashed:
	// `,"hash":"<64 hex>"}`.
	hashedTail = len(`,"hash":"`) + 64 + 2
)

// Header reads what integrity checking needs from a line (no trailing
// newline) without decoding its body: the seq, the prev and hash fields,
// and the hash the line's bytes actually have.
func Header(line []byte) (seq int64, prev, stated, actual tlog.Hash, err error) {
	if len(line) < len(linePrefix)+suffixLen || !bytes.HasPrefix(line, []byte(linePrefix)) {
		return 0, prev, stated, actual, errors.New("not a version 1 record line")
	}
	seq, _, err = parseSeq(line[len(linePrefix):])
	if err != nil {
		return 0, prev, stated, actual, err
	}
	tail := line[len(line)-suffixLen:]
	if !bytes.HasPrefix(tail, []byte(prevKey)) || string(tail[len(prevKey)+64:len(prevKey)+64+len(hashKey)]) != hashKey || !bytes.HasSuffix(tail, []byte(`"}`)) {
		return 0, prev, stated, actual, errors.New(`record does not end with "prev" and "hash"`)
	}
	if err := decodeHex(&prev, tail[len(prevKey):len(prevKey)+64]); err != nil {
		return 0, prev, stated, actual, fmt.Errorf("prev: %v", err)
	}
	if err := decodeHex(&stated, tail[len(tail)-66:len(tail)-2]); err != nil {
		return 0, prev, stated, actual, fmt.Errorf("hash: %v", err)
	}
	actual = sha256.Sum256(line[:len(line)-hashedTail])
	return seq, prev, stated, actual, nil
}

// parseSeq reads a canonical non-negative decimal followed by a comma.
func parseSeq(b []byte) (int64, int, error) {
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == 0 || i > 18 || (i > 1 && b[0] == '0') || i >= len(b) || b[i] != ',' {
		return 0, 0, errors.New("seq is not a canonical decimal")
	}
	n, err := strconv.ParseInt(string(b[:i]), 10, 64)
	return n, i, err
}

// decodeHex decodes exactly 64 lower-case hex digits.
func decodeHex(h *tlog.Hash, b []byte) error {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return errors.New("not 64 lower-case hex digits")
		}
	}
	_, err := hex.Decode(h[:], b)
	return err
}

// Parse reads one record line (without its newline) and checks that it is
// in canonical form and that its hash field is the hash of its bytes. It
// does not check the link to the previous record; Reader does.
func Parse(line []byte) (Record, error) {
	var r Record
	seq, prev, stated, actual, err := Header(line)
	if err != nil {
		return r, err
	}
	if stated != actual {
		return r, fmt.Errorf("hash field %s is not the hash of the record (%s)", short(stated), short(actual))
	}
	r.Seq, r.Prev, r.Hash = seq, prev, stated
	// Everything between the prefix and the suffix is an object's inside:
	// decode it as one object and let the re-encoding check the order.
	inner := line[len(`{`) : len(line)-suffixLen]
	var hdr struct {
		V       *int    `json:"v"`
		Seq     *int64  `json:"seq"`
		TS      *string `json:"ts"`
		Session *string `json:"session"`
		Kind    *string `json:"kind"`
	}
	obj := make([]byte, 0, len(inner)+2)
	obj = append(append(append(obj, '{'), inner...), '}')
	if !json.Valid(obj) {
		return r, errors.New("record is not valid JSON")
	}
	if err := json.Unmarshal(obj, &hdr); err != nil {
		return r, fmt.Errorf("record header: %v", err)
	}
	if hdr.V == nil || hdr.Seq == nil || hdr.TS == nil || hdr.Session == nil || hdr.Kind == nil {
		return r, errors.New("record needs v, seq, ts, session and kind")
	}
	r.Session, r.Kind = *hdr.Session, Kind(*hdr.Kind)
	if !knownKind(r.Kind) {
		return r, fmt.Errorf("unknown record kind %q", r.Kind)
	}
	if r.TS, err = time.Parse(TimeFormat, *hdr.TS); err != nil {
		return r, fmt.Errorf("ts %q is not %s", *hdr.TS, TimeFormat)
	}
	// The body is what follows the kind: either nothing or ",{fields}".
	head := headerBytes(r.Seq, r.TS, r.Session, r.Kind)
	if !bytes.HasPrefix(line, head) {
		return r, errors.New("record header is not in canonical form")
	}
	rest := line[len(head) : len(line)-suffixLen]
	switch {
	case len(rest) == 0:
		r.Body = json.RawMessage("{}")
	case rest[0] == ',' && len(rest) > 1:
		body := make([]byte, 0, len(rest)+1)
		body = append(append(append(body, '{'), rest[1:]...), '}')
		if !json.Valid(body) {
			return r, errors.New("record body is not a JSON object")
		}
		r.Body = body
	default:
		return r, errors.New("record header is not in canonical form")
	}
	if enc := r.encode(); !bytes.Equal(enc, line) {
		return r, errors.New("record is not in canonical form")
	}
	return r, nil
}

// headerBytes is everything from the opening brace to the kind.
func headerBytes(seq int64, ts time.Time, session string, kind Kind) []byte {
	b := make([]byte, 0, 96+len(session))
	b = append(b, linePrefix...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"ts":"`...)
	b = ts.UTC().AppendFormat(b, TimeFormat)
	b = append(b, `","session":`...)
	b = appendString(b, session)
	b = append(b, `,"kind":"`...)
	b = append(b, kind...)
	return append(b, '"')
}

// encode writes the record's line with its stored Prev and Hash.
func (r *Record) encode() []byte {
	b := headerBytes(r.Seq, r.TS, r.Session, r.Kind)
	if len(r.Body) > 2 {
		b = append(b, ',')
		b = append(b, r.Body[1:len(r.Body)-1]...)
	}
	b = append(b, prevKey...)
	b = hex.AppendEncode(b, r.Prev[:])
	b = append(b, hashKey...)
	b = hex.AppendEncode(b, r.Hash[:])
	return append(b, `"}`...)
}

// Line is the record's canonical line, without the newline.
func (r *Record) Line() []byte { return r.encode() }

// seal builds a record's line from its values and prev, and sets its hash.
func seal(seq int64, ts time.Time, session string, kind Kind, body []byte, prev tlog.Hash) (Record, []byte) {
	r := Record{Seq: seq, TS: ts.UTC(), Session: session, Kind: kind, Body: body, Prev: prev}
	line := r.encode()
	r.Hash = sha256.Sum256(line[:len(line)-hashedTail])
	hex.Encode(line[len(line)-66:len(line)-2], r.Hash[:])
	return r, line
}

// Leaf is the record's Merkle leaf hash.
func (r *Record) Leaf() tlog.Hash { return tlog.RecordHash(r.Hash[:]) }

func appendString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// MarshalBody encodes a body value the way records store it.
func MarshalBody(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(b) < 2 || b[0] != '{' {
		return nil, errors.New("a record body must be a JSON object")
	}
	return b, nil
}

// DecodeBody decodes a record's body into v (a pointer to one of the *Body
// types). Unknown fields, and fields not in canonical form, are errors:
// two encodings of one body would mean two hashes for one meaning.
func DecodeBody(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	again, err := MarshalBody(v)
	if err != nil {
		return err
	}
	if !bytes.Equal(again, body) {
		return errors.New("body is not in canonical form (field order, escaping or a repeated key)")
	}
	return nil
}

func short(h tlog.Hash) string { return hex.EncodeToString(h[:6]) }
