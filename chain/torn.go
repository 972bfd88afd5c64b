package chain

import (
	"bytes"
	"encoding/json"
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
// it is due: its line starts with that seq, and where the cut falls
// after "prev" it links to the record before; a crash may add zeros. A
// fragment that says
// anything else was written by someone else, and cutting it as a tear
// would hide the edit.
func notATear(line []byte, seq int64, prev tlog.Hash) string {
	if json.Valid(line) {
		if bytes.HasSuffix(line, []byte(`"}`)) {
			return "" // a whole record lacking its newline: checked as one
		}
		return fmt.Sprintf("the unterminated last line (%d bytes) is whole JSON followed by white space: a writer stops before a record's newline, never writes past it", len(line))
	}
	if n := pastRecordEnd(line); n > 0 {
		return fmt.Sprintf("the unterminated last line (%d bytes) holds a whole record followed by %d more bytes: a writer stops before a record's newline, never writes past it", len(line), n)
	}
	// A crash can also leave zeros where the file grew before its data
	// reached the disk.
	line = bytes.TrimRight(line, "\x00")
	want := []byte(linePrefix + strconv.FormatInt(seq, 10) + `,"ts":"`)
	n := min(len(line), len(want))
	if !bytes.Equal(line[:n], want[:n]) {
		return fmt.Sprintf("the unterminated last line (%d bytes) is not the start of record %d: it was not left by a writer stopping mid-record", len(line), seq)
	}
	if i := bytes.LastIndex(line, []byte(prevKey)); i >= 0 && len(line) >= i+len(prevKey)+64 {
		var got tlog.Hash
		if decodeHex(&got, line[i+len(prevKey):i+len(prevKey)+64]) == nil && got != prev {
			return fmt.Sprintf("the unterminated last line (%d bytes) does not link to record %d: it was not left by a writer stopping mid-record", len(line), seq-1)
		}
	}
	return ""
}

// pastRecordEnd is how many bytes follow the end of a whole record in
// line (its prev and hash, then "}), or 0 if no record ends in it. The
// end is found by its bytes: a body's keys are sorted, so "prev" never
// comes just before "hash" inside one, and a string's quotes are escaped.
// Zeros after the end are not counted: a crash can leave them.
func pastRecordEnd(line []byte) int {
	end := []byte(hashKey)
	for i := 0; ; {
		j := bytes.Index(line[i:], end)
		if j < 0 {
			return 0
		}
		h := i + j + len(end) // where the hash's hex starts
		i = i + j + 1
		if h-len(end)-64-len(prevKey) < 0 || !bytes.Equal(line[h-len(end)-64-len(prevKey):h-len(end)-64], []byte(prevKey)) || len(line) < h+66 {
			continue
		}
		var x tlog.Hash
		if decodeHex(&x, line[h-len(end)-64:h-len(end)]) != nil || decodeHex(&x, line[h:h+64]) != nil || string(line[h+64:h+66]) != `"}` {
			continue
		}
		return len(bytes.TrimRight(line[h+66:], "\x00"))
	}
}
