package export

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"bailiff/chain"
)

// Level is how much of a record was checked before it was exported.
type Level string

const (
	// Full: the log verified, chain and every recorded verdict.
	Full Level = "full"
	// Chain: the record's hash and link were checked against a verified
	// prefix (export --follow), its verdict not recomputed yet.
	Chain Level = "chain"
	// None: exported under --allow-unverified from a log with findings.
	None Level = "none"
)

// rank orders levels by what they claim, so a copy that claims less than
// the log now supports still matches and one that claims more does not.
func (l Level) rank() int {
	switch l {
	case Full:
		return 2
	case Chain:
		return 1
	case None:
		return 0
	}
	return -1
}

// Covers says whether a log checked to l supports an event claiming c.
func (l Level) Covers(c Level) bool { return c.rank() >= 0 && c.rank() <= l.rank() }

// Event is one record as exported.
type Event struct {
	// Log names the log: the hash of its first record, which no other
	// log shares and which a rename or a copy keeps.
	Log      string
	Seq      int64
	Hash     string
	Prev     string
	TS       time.Time
	Session  string
	Kind     string
	Verified Level
	// Attrs are the body's fields a SIEM queries, when the record has
	// them as strings; see attrKeys.
	Attrs map[string]string
	// Line is the record's exact line, without its newline.
	Line string
}

// attrKeys are the body fields copied beside the line, in the order
// every format writes them.
var attrKeys = []string{"server", "tool", "call", "verdict", "check", "rule", "grant", "status", "answer", "approver", "replica", "trace"}

// FromRecord is the event of rec, a record of the log whose first record
// has hash log.
func FromRecord(log chain.Hash, rec chain.Record, level Level) Event {
	e := Event{
		Log:      hex.EncodeToString(log[:]),
		Seq:      rec.Seq,
		Hash:     hex.EncodeToString(rec.Hash[:]),
		Prev:     hex.EncodeToString(rec.Prev[:]),
		TS:       rec.TS,
		Session:  rec.Session,
		Kind:     string(rec.Kind),
		Verified: level,
		Line:     string(rec.Line()),
	}
	for _, k := range attrKeys {
		raw, ok := chain.RawField(rec.Body, k)
		if !ok || len(raw) == 0 || raw[0] != '"' {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if e.Attrs == nil {
				e.Attrs = map[string]string{}
			}
			e.Attrs[k] = s
		}
	}
	return e
}

// Key is where an event belongs in the chain.
type Key struct {
	Log string
	Seq int64
}

func (k Key) String() string { return fmt.Sprintf("seq %d of log %.12s", k.Seq, k.Log) }
