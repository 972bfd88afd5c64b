package export

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"

	"bailiff/internal/jsontext"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"

	"bailiff/chain"
)

// What an exported copy can get wrong, event by event.
const (
	Dropped    = "dropped"    // a record of the log has no event
	Altered    = "altered"    // an event differs from its record
	Invented   = "invented"   // an event has no record
	Repeated   = "repeated"   // a record has two events
	Unreadable = "unreadable" // a line that is no event of the copy's format
	Overclaims = "overclaims" // an event claims a check the log does not pass
)

// Log is one log the copy is checked against, as it was verified.
type Log struct {
	Name string
	R    io.Reader
	// Level is what the log's verification supports: Full when it
	// verified, None when it had findings.
	Level Level
	// Records and Root are what verify read; the log is read to exactly
	// there, and a log whose records are not those is refused.
	Records int64
	Root    chain.Hash
}

// Difference is one way the copy differs from the logs.
type Difference struct {
	What string
	// Line is the copy's line (from 1); 0 for a dropped record.
	Line int
	Key  Key
	// File is the log's name, "" when the event names no log given.
	File   string
	Detail string
}

func (d Difference) String() string {
	where := d.Key.String()
	if d.File != "" {
		where = fmt.Sprintf("seq %d of %s", d.Key.Seq, d.File)
	}
	switch {
	case d.What == Unreadable:
		return fmt.Sprintf("line %d: %s", d.Line, d.Detail)
	case d.Line == 0:
		return fmt.Sprintf("%s: %s", where, d.Detail)
	}
	return fmt.Sprintf("line %d: %s: %s", d.Line, where, d.Detail)
}

// MaxListed bounds the differences kept; Counts has them all.
const MaxListed = 100

// Result is what Check found.
type Result struct {
	Format  Format
	Events  int   // events in the copy
	Records int64 // records in the logs
	// Differences, at most MaxListed, the first in chain order first:
	// unreadable lines, then by log and seq, then events of no log.
	Differences []Difference
	Counts      map[string]int
}

// Differs says whether the copy is not the logs.
func (r *Result) Differs() bool { return len(r.Counts) > 0 }

// maxEventLine bounds one exported line: a record line may be 64 MiB,
// and escaping it as a string can double it.
const maxEventLine = 160 << 20

type ref struct {
	line  int
	off   int64
	n     int
	level Level
}

type sorted struct {
	d     Difference
	log   int
	order int
}

// Check compares the copy in exported (size bytes) with logs, in the
// order given.
func Check(exported io.ReaderAt, size int64, logs []Log) (*Result, error) {
	res := &Result{Counts: map[string]int{}}
	var found []sorted
	add := func(d Difference, log int) {
		res.Counts[d.What]++
		found = append(found, sorted{d, log, len(found)})
		if len(found) >= 4*MaxListed {
			// Only the first are listed: a copy of millions of bad lines
			// must not hold them all.
			found = firstOf(found)
		}
	}
	index, repeats, err := indexCopy(exported, size, res, add)
	if err != nil {
		return nil, err
	}
	ids := map[string]int{}
	for i, l := range logs {
		id, err := compareLog(exported, l, index, res, func(d Difference) { add(d, i) })
		if err != nil {
			return nil, err
		}
		ids[id] = i
	}
	for _, d := range repeats {
		i, known := ids[d.Key.Log]
		if known {
			d.File = logs[i].Name
		} else {
			i = len(logs)
		}
		add(d, i)
	}
	for _, k := range slices.SortedFunc(maps.Keys(index), func(a, b Key) int { return index[a].line - index[b].line }) {
		d := Difference{What: Invented, Line: index[k].line, Key: k, Detail: "no record of the logs is at this place in the chain"}
		i, known := ids[k.Log]
		if known {
			d.File = logs[i].Name
			d.Detail = fmt.Sprintf("the log has %d records", logs[i].Records)
		} else {
			i = len(logs)
			d.Detail = "it names a log not given"
		}
		add(d, i)
	}
	for _, s := range firstOf(found) {
		res.Differences = append(res.Differences, s.d)
	}
	return res, nil
}

// firstOf is the first MaxListed of found in chain order: unreadable
// lines by line, then by log, seq and line.
func firstOf(found []sorted) []sorted {
	slices.SortStableFunc(found, func(a, b sorted) int {
		ra, rb := rank(a), rank(b)
		if ra != rb {
			return ra - rb
		}
		if a.log != b.log {
			return a.log - b.log
		}
		if a.d.Key.Seq != b.d.Key.Seq {
			return cmp.Compare(a.d.Key.Seq, b.d.Key.Seq)
		}
		return a.d.Line - b.d.Line
	})
	return found[:min(len(found), MaxListed)]
}

func rank(s sorted) int {
	if s.d.What == Unreadable {
		return 0
	}
	return 1
}

// indexCopy reads the copy once, keeping where each event is, and
// returns the events repeated, to be named once the logs are known.
func indexCopy(exported io.ReaderAt, size int64, res *Result, add func(Difference, int)) (map[Key]ref, []Difference, error) {
	index := map[Key]ref{}
	var repeats []Difference
	br := bufio.NewReaderSize(io.NewSectionReader(exported, 0, size), 64<<10)
	var off int64
	for line := 1; ; line++ {
		text, err := readLine(br)
		if err == io.EOF && len(text) == 0 {
			return index, repeats, nil
		}
		if err != nil && err != io.EOF {
			return nil, nil, err
		}
		at, n := off, len(text)
		off += int64(n)
		text = trimNewline(text)
		if len(text) == 0 {
			continue
		}
		res.Events++
		k, lvl, why := readEvent(text, &res.Format)
		if why != "" {
			add(Difference{What: Unreadable, Line: line, Detail: why}, -1)
			continue
		}
		if first, dup := index[k]; dup {
			if len(repeats) < 4*MaxListed {
				repeats = append(repeats, Difference{What: Repeated, Line: line, Key: k, Detail: fmt.Sprintf("the event of line %d again", first.line)})
			} else {
				res.Counts[Repeated]++ // counted, not listed
			}
			continue
		}
		index[k] = ref{line: line, off: at, n: len(text), level: lvl}
	}
}

// readEvent reads where one line's event belongs; why says what is wrong
// with a line that is no event of format (set by the first event read).
// It reads no more of the line than that: every line it places is
// compared in full later, and one it cannot place is a difference, so a
// line that reads one way here and another way to a SIEM (a key given
// twice, in another case) is never taken for its record.
func readEvent(text []byte, format *Format) (Key, Level, string) {
	var p probe
	if err := json.Unmarshal(text, &p); err != nil {
		return Key{}, "", fmt.Sprintf("not an exported event: %v", jsontext.PlainJSON(err, ""))
	}
	f, ok := p.format()
	switch {
	case !ok:
		return Key{}, "", "not an exported event: it has the shape of no export format"
	case *format == "":
		*format = f
	case f != *format:
		return Key{}, "", fmt.Sprintf("a %s event in a copy of %s events", f, *format)
	}
	k, lvl, err := p.key(f)
	if err != nil {
		return Key{}, "", err.Error()
	}
	return k, lvl, ""
}

// readLine reads one line, however long up to maxEventLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxEventLine {
			return nil, fmt.Errorf("a line longer than %d bytes", maxEventLine)
		}
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

// compareLog reads log l to where it was verified and compares each
// record with its event, taking the events it finds out of index. It
// returns the log's id.
func compareLog(exported io.ReaderAt, l Log, index map[Key]ref, res *Result, add func(Difference)) (string, error) {
	r := chain.NewReader(l.R)
	var id chain.Hash
	for n := int64(0); n < l.Records; n++ {
		rec, err := r.Next()
		if err != nil {
			return "", fmt.Errorf("%s changed since it was verified: %v", l.Name, err)
		}
		if n == 0 {
			id = rec.Hash
		}
		res.Records++
		k := Key{hex.EncodeToString(id[:]), rec.Seq}
		at, ok := index[k]
		if !ok {
			add(Difference{What: Dropped, Key: k, File: l.Name, Detail: "not in the copy"})
			continue
		}
		delete(index, k)
		if d := compareEvent(exported, res.Format, at, id, rec, l); d != nil {
			d.Key, d.File = k, l.Name
			add(*d)
		}
	}
	if r.Root() != l.Root {
		return "", fmt.Errorf("%s changed since it was verified: its first %d records are not the ones verified", l.Name, l.Records)
	}
	return hex.EncodeToString(id[:]), nil
}

// compareEvent is how the event at ref differs from rec's, or nil.
func compareEvent(exported io.ReaderAt, f Format, at ref, id chain.Hash, rec chain.Record, l Log) *Difference {
	text := make([]byte, at.n)
	if _, err := exported.ReadAt(text, at.off); err != nil {
		return &Difference{What: Unreadable, Line: at.line, Detail: err.Error()}
	}
	if !l.Level.Covers(at.level) {
		return &Difference{What: Overclaims, Line: at.line, Detail: fmt.Sprintf("it says verified %q, and the log does not verify", at.level)}
	}
	expected := trimNewline(Append(nil, f, FromRecord(id, rec, at.level)))
	if bytes.Equal(text, expected) {
		return nil // as export wrote it
	}
	got, err := parse(text)
	if err != nil {
		return &Difference{What: Unreadable, Line: at.line, Detail: err.Error()}
	}
	want, err := parse(expected)
	if err != nil {
		return &Difference{What: Altered, Line: at.line, Detail: err.Error()} // not reached: Append writes JSON
	}
	if d, g, w := diff(got, want, ""); d != "" {
		gs, ws := shown(g, w)
		return &Difference{What: Altered, Line: at.line, Detail: fmt.Sprintf("%s is %s, the log's is %s", d, gs, ws)}
	}
	return nil
}
