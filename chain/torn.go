package chain

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/mod/sumdb/tlog"
)

// tornReason tells a partial last record from a whole one that lacks only
// its newline, since repair cuts the first and keeps the second.
func tornReason(line []byte) string {
	if json.Valid(line) {
		return fmt.Sprintf("the last line (%d bytes) has no newline (the writer stopped before it; bailiff repair adds it if the record is intact)", len(line))
	}
	return fmt.Sprintf("torn last line: %d bytes with no newline (the writer stopped mid-record; bailiff repair cuts it off)", len(line))
}

// notATear says why an unterminated last line cannot be what a writer
// stopped mid-record leaves, or "" if it can. A writer writes the record
// it is due, in one piece: the line is the start of that record's line
// (its seq, then JSON cut short, no zero byte in it), links to the record
// before once its own "prev" is whole, carries that record's hash once
// its own "hash" is whole, and nothing past the record's end; a crash may
// add zeros. A fragment that says anything else was written by someone
// else, and cutting it as a tear would hide the edit.
func notATear(line []byte, seq int64, prev tlog.Hash) string {
	bad := func(why string, args ...any) string {
		return fmt.Sprintf("the unterminated last line (%d bytes) %s: it was not left by a writer stopping mid-record", len(line), fmt.Sprintf(why, args...))
	}
	if json.Valid(line) {
		if bytes.HasSuffix(line, []byte(`"}`)) {
			return "" // a whole record lacking its newline: checked as one
		}
		return bad("is whole JSON followed by white space; a writer never writes past a record's end")
	}
	if n := pastRecordEnd(line); n > 0 {
		return bad("holds a whole record followed by %d more bytes; a writer never writes past a record's end", n)
	}
	// A crash can also leave zeros where the file grew before its data
	// reached the disk: only at the end.
	cut := bytes.TrimRight(line, "\x00")
	if bytes.IndexByte(cut, 0) >= 0 {
		return bad("holds a zero byte before its last bytes; JSON holds none, and a crash leaves zeros only at the end")
	}
	want := []byte(linePrefix + strconv.FormatInt(seq, 10) + `,"ts":"`)
	n := min(len(cut), len(want))
	if !bytes.Equal(cut[:n], want[:n]) {
		return bad("is not the start of record %d", seq)
	}
	if json.Valid(cut) {
		// A whole record, then zeros: it must be the record due.
		if _, ve := linkCheck(cut, seq, prev, func(reason, _, _ string) *VerifyError { return &VerifyError{Reason: reason} }); ve != nil {
			return bad("is a whole record followed by zeros, and %s", ve.Reason)
		}
		return ""
	}
	if !jsonPrefix(cut) {
		return bad("is not JSON cut short")
	}
	return ownTail(cut, seq, prev, bad)
}

// jsonPrefix tells whether b is JSON cut short: the start of a valid text
// that ends too soon, not one with a wrong byte in it.
func jsonPrefix(b []byte) bool {
	var v json.RawMessage
	err := json.Unmarshal(b, &v)
	var se *json.SyntaxError
	return errors.As(err, &se) && se.Error() == "unexpected end of JSON input"
}

// ownTail checks the record's own "prev" and "hash" in fragment b, as far
// as they were written. They are found by their bytes: a body's keys are
// sorted, so "prev" is never followed by "hash" inside one (see
// pastRecordEnd), and where the cut leaves only "prev" it could be a
// body's, so it is not judged.
func ownTail(b []byte, seq int64, prev tlog.Hash, bad func(string, ...any) string) string {
	k := tailAt(b, 0)
	if k < 0 {
		return ""
	}
	var got tlog.Hash
	if decodeHex(&got, b[k-64:k]) != nil || got != prev {
		return bad("does not link to record %d", seq-1)
	}
	rest := b[k+len(hashKey):]
	if len(rest) > 64+2 {
		// pastRecordEnd has refused a whole end with bytes after it;
		// anything else this long is not the record's end either.
		return bad("has a hash that is not 64 lower-case hex digits")
	}
	for i, c := range rest {
		if i < 64 && !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') || i >= 64 && c != `"}`[i-64] {
			return bad("has a hash that is not 64 lower-case hex digits")
		}
	}
	if len(rest) >= 64 {
		var stated tlog.Hash
		_ = decodeHex(&stated, rest[:64])
		if stated != sha256.Sum256(b[:k+1]) {
			return bad("has a hash that does not match its bytes")
		}
	}
	return ""
}

// tailAt is where a record's own `","hash":"` starts in b at or after
// from, right after a `,"prev":"` and its 64 bytes, or -1 if there is
// none.
func tailAt(b []byte, from int) int {
	for i := from; i < len(b); {
		j := bytes.Index(b[i:], []byte(hashKey))
		if j < 0 {
			return -1
		}
		k := i + j
		if k-64-len(prevKey) >= 0 && bytes.Equal(b[k-64-len(prevKey):k-64], []byte(prevKey)) {
			return k
		}
		i = k + 1
	}
	return -1
}

// pastRecordEnd is how many bytes follow the end of a whole record in
// line (its prev and hash, then "}), or 0 if no record ends in it. The
// end is found by its bytes: a body's keys are sorted, so "prev" never
// comes just before "hash" inside one, and a string's quotes are escaped.
// Zeros after the end are not counted: a crash can leave them.
func pastRecordEnd(line []byte) int {
	for k := tailAt(line, 0); k >= 0; k = tailAt(line, k+1) {
		h := k + len(hashKey) // where the hash's hex starts
		if len(line) < h+66 {
			return 0 // a later end would start later still
		}
		var x tlog.Hash
		if decodeHex(&x, line[k-64:k]) == nil && decodeHex(&x, line[h:h+64]) == nil && string(line[h+64:h+66]) == `"}` {
			return len(bytes.TrimRight(line[h+66:], "\x00"))
		}
	}
	return 0
}
