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
//   - K is the record kind: session, tools, call, grant, result, end,
//     checkpoint or malformed;
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

	fastjson "github.com/segmentio/encoding/json"
	"golang.org/x/mod/sumdb/tlog"
)

// Version is the record format version this package writes and reads.
const Version = 1

// TimeFormat is the only accepted form of a record's ts.
const TimeFormat = "2006-01-02T15:04:05.000000000Z"

// CheckTime refuses a time TimeFormat cannot hold: a year before 0 or
// after 9999 is written with more or fewer digits, and the reader (which
// parses exactly that layout) would call the record tampered.
func CheckTime(t time.Time) error {
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return fmt.Errorf("time %s is outside the years 0000 to 9999 a log can hold", t.UTC().Format(time.RFC3339))
	}
	return nil
}

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
	KindMalformed  Kind = "malformed"
)

func knownKind(k Kind) bool {
	switch k {
	case KindSession, KindTools, KindCall, KindGrant, KindResult, KindEnd, KindCheckpoint, KindMalformed:
		return true
	}
	return false
}

// Hash is a record hash or a Merkle root, as tlog computes them; it is
// named here so the log's users need not import tlog.
type Hash = tlog.Hash

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

// readHeader reads what integrity checking needs from a line (no trailing
// newline) without decoding its body: the seq, the prev and hash fields,
// and the hash the line's bytes actually have.
func readHeader(line []byte) (seq int64, prev, stated, actual tlog.Hash, err error) {
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
	if len(b) != 2*len(h) {
		return errors.New("not 64 lower-case hex digits")
	}
	var bad byte
	for i := range h {
		hi, lo := hexVal[b[2*i]], hexVal[b[2*i+1]]
		bad |= hi | lo
		h[i] = hi<<4 | lo&0x0f
	}
	if bad&0x80 != 0 {
		return errors.New("not 64 lower-case hex digits")
	}
	return nil
}

// hexVal maps a lower-case hex digit to its value and anything else to
// 0x80, so one OR over a whole hash tells whether it was all digits.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0x80
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
	}
	return t
}()

// Parse reads one record line (without its newline) and checks that it is
// in canonical form and that its hash field is the hash of its bytes. It
// does not check the link to the previous record; Reader does.
func Parse(line []byte) (Record, error) {
	seq, prev, stated, actual, err := readHeader(line)
	if err != nil {
		return Record{}, err
	}
	if stated != actual {
		return Record{}, fmt.Errorf("hash field %s is not the hash of the record (%s)", short(stated), short(actual))
	}
	return parseFrame(line, seq, prev, stated, nil)
}

// parseFrame reads the ts, session, kind and body of a line whose seq,
// prev and hash Header has read, and checks the frame is canonical by
// encoding it again.
// intern, when set, shares the session id between the records of a
// session.
func parseFrame(line []byte, seq int64, prev, hash tlog.Hash, intern *interner) (Record, error) {
	r := Record{Seq: seq, Prev: prev, Hash: hash}
	rest := line[len(linePrefix):]
	_, n, _ := parseSeq(rest)
	rest = rest[n:]
	const tsKey, sessKey, kindKey = `,"ts":"`, `","session":`, `,"kind":"`
	if !bytes.HasPrefix(rest, []byte(tsKey)) || len(rest) < len(tsKey)+len(TimeFormat)+len(sessKey) {
		return r, errors.New("record has no ts where the format puts it")
	}
	ts, canonical := parseTS(rest[len(tsKey) : len(tsKey)+len(TimeFormat)])
	if !canonical {
		var err error
		if ts, err = time.Parse(TimeFormat, string(rest[len(tsKey):len(tsKey)+len(TimeFormat)])); err != nil {
			return r, fmt.Errorf("ts is not %s", TimeFormat)
		}
	}
	r.TS = ts
	rest = rest[len(tsKey)+len(TimeFormat):]
	if !bytes.HasPrefix(rest, []byte(sessKey)) {
		return r, errors.New("record has no session where the format puts it")
	}
	rest = rest[len(sessKey):]
	end := stringEnd(rest)
	if end < 0 {
		return r, errors.New("record session is not a JSON string")
	}
	session, plain, err := frameString(rest[:end], intern)
	if err != nil {
		return r, fmt.Errorf("record session: %v", err)
	}
	r.Session = session
	rest = rest[end:]
	if !bytes.HasPrefix(rest, []byte(kindKey)) {
		return r, errors.New("record has no kind where the format puts it")
	}
	rest = rest[len(kindKey):]
	q := bytes.IndexByte(rest, '"')
	if q < 0 {
		return r, errors.New("record kind is not a string")
	}
	r.Kind = Kind(rest[:q])
	if !knownKind(r.Kind) {
		return r, fmt.Errorf("unknown record kind %q", r.Kind)
	}
	// Every piece of the header was read where the format puts it; when
	// the ts and session were taken as their own canonical bytes, the
	// header is what encoding it again would write, and only otherwise
	// is it encoded again to compare.
	headLen := len(line) - len(rest) + q + 1
	if !canonical || !plain {
		var scratch [128]byte // most headers fit: comparing them allocates nothing
		head := appendHeader(scratch[:0], r.Seq, r.TS, r.Session, r.Kind)
		if !bytes.HasPrefix(line, head) {
			return r, errors.New("record header is not in canonical form")
		}
		headLen = len(head)
	}
	r.Body, err = frameBody(line[headLen : len(line)-suffixLen])
	return r, err
}

// frameBody makes the body object of what follows the kind: either
// nothing or ",{fields}".
func frameBody(body []byte) (json.RawMessage, error) {
	switch {
	case len(body) == 0:
		return json.RawMessage("{}"), nil
	case body[0] == ',' && len(body) > 1:
		b := make([]byte, len(body)+1)
		b[0] = '{'
		copy(b[1:], body[1:])
		b[len(b)-1] = '}'
		if !fastjson.Valid(b) {
			return nil, errors.New("record body is not a JSON object")
		}
		if k := reservedKey(b); k != "" {
			// A second "kind" (or seq, …) would read differently to a
			// parser that keeps the last of two equal keys.
			return nil, fmt.Errorf("record body repeats the frame's key %q", k)
		}
		return b, nil
	}
	return nil, errors.New("record header is not in canonical form")
}

// headerBytes is everything from the opening brace to the kind.
func headerBytes(seq int64, ts time.Time, session string, kind Kind) []byte {
	return appendHeader(make([]byte, 0, 96+len(session)), seq, ts, session, kind)
}

// appendHeader appends headerBytes to b.
func appendHeader(b []byte, seq int64, ts time.Time, session string, kind Kind) []byte {
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
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
	}
	if plain {
		// What the encoder would write, without building one.
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

func short(h tlog.Hash) string { return hex.EncodeToString(h[:6]) }
