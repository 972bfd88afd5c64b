package chain

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// ErrEmptyLog is a log with no records: there is nothing in it to prove,
// and an empty file must not read as a clean log.
var ErrEmptyLog = errors.New("empty audit log: nothing to verify")

// ErrNotALog matches every *NotALogError.
var ErrNotALog = errors.New("not a bailiff audit log")

// NotALogError is input whose first line is not an audit record at all:
// a trace, a policy, a binary. It is the wrong file, not a tampered log,
// so callers report it as an input error rather than a finding.
type NotALogError struct {
	// Looks says what the input looks like, as the end of a sentence
	// whose subject is the file: "is binary data, not a bailiff audit
	// log".
	Looks string
}

func (e *NotALogError) Error() string { return e.Looks }

func (e *NotALogError) Is(target error) bool { return target == ErrNotALog }

// StartsLikeLog tells whether head, the start of a file, begins as every
// record line does: how a file is told to be a log rather than a trace
// without reading it.
func StartsLikeLog(head []byte) bool { return bytes.HasPrefix(head, []byte(linePrefix)) }

// sniff returns a *NotALogError when the first line of an input cannot be
// the first line of any log (every record line starts with the version
// prefix), and nil when it could be: a first line with the prefix that
// fails later is an edited record, and stays an integrity failure. So is
// a first line without it followed by a record line (next is what the
// reader holds after the first line): that is a log whose first record
// was edited.
func sniff(first, next []byte) error {
	if bytes.HasPrefix(first, []byte(linePrefix)) || bytes.HasPrefix(next, []byte(linePrefix)) {
		return nil
	}
	if bytes.IndexByte(first, 0) >= 0 || !utf8.Valid(first) {
		return &NotALogError{Looks: "is binary data, not a bailiff audit log"}
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimSpace(first), &obj) == nil {
		// What other JSON it is (a trace, a policy) is for a reader that
		// knows those formats to say: the log knows only its own.
		return &NotALogError{Looks: "is JSON but not a bailiff audit log"}
	}
	return &NotALogError{Looks: "is not a bailiff audit log"}
}
