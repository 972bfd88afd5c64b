package audit

import (
	"encoding/json"
	"errors"
	"io"
	"time"

	"bailiff/chain"
)

// What a gateway needs of the log's vocabulary, so that it writes and
// reads records only through audit: record times, the digest a result
// names its content by, and the store that content is kept in.

// TimeFormat is how a record body writes a time (a grant's expiry, an
// approval's signing).
const TimeFormat = chain.TimeFormat

// FormatTime writes t as a record body does.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// ParseTime reads a time a record body wrote.
func ParseTime(s string) (time.Time, error) { return time.Parse(TimeFormat, s) }

// EvidenceStore is where a result's content is kept, by its digest.
type EvidenceStore = chain.EvidenceStore

// ContentDigest is the digest a result record names its content by.
func ContentDigest(content []byte) string { return chain.Digest(content) }

// NewMalformed is the record of a request that could not be read: its
// size and digest, and why.
func NewMalformed(call string, raw []byte, reason string) *MalformedBody {
	return &MalformedBody{Call: call, Size: len(raw), Digest: chain.Digest(raw), Reason: reason}
}

// ApproverName is the approver a private key signs as.
func ApproverName(skey string) string { return chain.KeyName(skey) }

// RecordHead is a record as a scan meets it, before its body is decoded.
type RecordHead struct {
	Kind    chain.Kind
	Session string
	Body    []byte
}

// Scan reads a log's records in order for a reader that looks for a few
// of them (the gateway's pending asks): fn is given each record's head
// and a decode that reads it as a step, which fn calls only for a record
// worth the cost; the event is valid until the next record. A torn last
// line ends the scan as the log's end (the gateway may be writing it);
// any other failure of integrity is the error.
func Scan(r io.Reader, fn func(h RecordHead, decode func() (*Event, error))) error {
	rd := chain.NewReader(r)
	var dec Decoder
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return nil
		}
		var ve *chain.VerifyError
		if errors.As(err, &ve) && ve.Torn {
			return nil
		}
		if err != nil {
			return err
		}
		fn(RecordHead{Kind: rec.Kind, Session: rec.Session, Body: rec.Body}, func() (*Event, error) { return dec.Decode(rec) })
	}
}

// CallID is the id a call record's body names, read without decoding the
// rest of it ("" when it names none).
func CallID(body []byte) string {
	raw, ok := chain.RawField(body, "call")
	var id string
	if !ok || json.Unmarshal(raw, &id) != nil {
		return ""
	}
	return id
}
