package export

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"bailiff/chain"
)

const fixture = "../fixtures/chain/good_mail.jsonl"

// logOf is the fixture as verified: every record, and their root.
func logOf(t testing.TB, name string, level Level) (Log, []byte) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	r := chain.NewReader(bytes.NewReader(data))
	var n int64
	for ; ; n++ {
		if _, err := r.Next(); err != nil {
			break
		}
	}
	return Log{Name: name, R: bytes.NewReader(data), Level: level, Records: n, Root: r.Root()}, data
}

// rootOf is the root of l's first n records.
func rootOf(t testing.TB, l Log, n int) chain.Hash {
	l.R.(*bytes.Reader).Seek(0, 0)
	r := chain.NewReader(l.R)
	for range n {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	return r.Root()
}

func exported(t testing.TB, f Format, logs ...Log) []byte {
	t.Helper()
	for i := range logs {
		logs[i].R.(*bytes.Reader).Seek(0, 0)
	}
	var b bytes.Buffer
	if _, err := Write(&b, f, logs); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func check(t testing.TB, copied []byte, logs ...Log) *Result {
	t.Helper()
	for i := range logs {
		logs[i].R.(*bytes.Reader).Seek(0, 0)
	}
	res, err := Check(bytes.NewReader(copied), int64(len(copied)), logs)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// lines are the copy's lines, each with its newline.
func lines(b []byte) []string {
	ls := strings.SplitAfter(string(b), "\n")
	return ls[:len(ls)-1]
}

// TestRoundTrip: a log's export in each format matches it, one event per
// record, and each event carries its line, whose bytes hash to its hash
// and link to the event before it: the copy is evidence on its own.
func TestRoundTrip(t *testing.T) {
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			l, _ := logOf(t, fixture, Full)
			out := exported(t, f, l)
			res := check(t, out, l)
			if res.Differs() || res.Events != int(l.Records) || res.Records != l.Records || res.Format != f {
				t.Fatalf("a fresh export: %+v, want %d events, no difference, format %s", res, l.Records, f)
			}
			prev := strings.Repeat("0", 64)
			for i, text := range lines(out) {
				v, err := parse([]byte(strings.TrimSuffix(text, "\n")))
				if err != nil {
					t.Fatal(err)
				}
				line, hash, prevOf := eventLine(t, f, v)
				cut := strings.LastIndex(line, `,"hash":"`)
				sum := sha256.Sum256([]byte(line[:cut]))
				if hex.EncodeToString(sum[:]) != hash || !strings.HasSuffix(line, `"hash":"`+hash+`"}`) || prevOf != prev {
					t.Fatalf("event %d: its line does not hash to its hash %s, or does not link to %s", i, hash, prev)
				}
				prev = hash
			}
		})
	}
}

// eventLine reads an event's line, hash and prev as a SIEM would.
func eventLine(t *testing.T, f Format, v any) (line, hash, prev string) {
	switch f {
	case OTLP:
		rec := path(v, "resourceLogs", 0, "scopeLogs", 0, "logRecords", 0)
		attr := map[string]string{}
		for _, a := range path(rec, "attributes").([]any) {
			s, _ := path(a, "value", "stringValue").(string)
			attr[path(a, "key").(string)] = s
		}
		return path(rec, "body", "stringValue").(string), attr["bailiff.hash"], attr["bailiff.prev"]
	case SplunkHEC:
		v = path(v, "event")
	}
	return path(v, "line").(string), path(v, "hash").(string), path(v, "prev").(string)
}

// TestReencodedCopyMatches: a SIEM that keeps each event but writes its
// JSON its own way (key order, spacing, escapes) still holds the same
// events.
func TestReencodedCopyMatches(t *testing.T) {
	for _, f := range Formats {
		l, _ := logOf(t, fixture, Full)
		var b bytes.Buffer
		for _, text := range lines(exported(t, f, l)) {
			var v any
			if err := json.Unmarshal([]byte(text), &v); err != nil {
				t.Fatal(err)
			}
			out, _ := json.MarshalIndent(v, "", "") // sorted keys, \u003c escapes
			b.Write(bytes.ReplaceAll(out, []byte("\n"), []byte(" ")))
			b.WriteString("\r\n\n")
		}
		if res := check(t, b.Bytes(), l); res.Differs() {
			t.Errorf("%s: a re-encoded copy differs: %+v", f, res.Differences)
		}
	}
}

// edit is one way an attacker changes a copy, and what Check must call it.
type edit struct {
	name string
	what string
	// do changes the copy's lines; it reports false when the format has
	// no place for this edit.
	do func(f Format, ls []string) ([]string, bool)
}

// replaceIn replaces old with new once in line i, or reports it is not there.
func replaceIn(ls []string, i int, old, new string) ([]string, bool) {
	if !strings.Contains(ls[i], old) {
		return nil, false
	}
	out := append([]string(nil), ls...)
	out[i] = strings.Replace(ls[i], old, new, 1)
	return out, true
}

// callLine is the index of the first call event with verdict allow.
func callLine(ls []string) int {
	for i, l := range ls {
		if strings.Contains(l, `"allow"`) && strings.Contains(l, `kind`) && strings.Contains(l, `call`) {
			return i
		}
	}
	return -1
}

var edits = []edit{
	{"drop first", Dropped, func(_ Format, ls []string) ([]string, bool) { return ls[1:], true }},
	{"drop middle", Dropped, func(_ Format, ls []string) ([]string, bool) {
		return append(append([]string(nil), ls[:7]...), ls[8:]...), true
	}},
	{"drop last", Dropped, func(_ Format, ls []string) ([]string, bool) { return ls[:len(ls)-1], true }},
	{"verdict beside the line", Altered, func(f Format, ls []string) ([]string, bool) {
		i := callLine(ls)
		if f == OTLP {
			return replaceIn(ls, i, `"bailiff.verdict","value":{"stringValue":"allow"}`, `"bailiff.verdict","value":{"stringValue":"deny"}`)
		}
		return replaceIn(ls, i, `"verdict":"allow"`, `"verdict":"deny"`)
	}},
	{"verdict in the line", Altered, func(_ Format, ls []string) ([]string, bool) {
		return replaceIn(ls, callLine(ls), `\"verdict\":\"allow\"`, `\"verdict\":\"deny\"`)
	}},
	{"hash", Altered, func(f Format, ls []string) ([]string, bool) {
		return flipHex(ls, 4, hashKey(f), false)
	}},
	{"field added", Altered, func(f Format, ls []string) ([]string, bool) {
		if f == OTLP {
			return replaceIn(ls, 3, `{"resourceLogs":`, `{"note":"x","resourceLogs":`)
		}
		return replaceIn(ls, 3, `"kind":`, `"note":"reviewed","kind":`)
	}},
	{"time moved", Altered, func(f Format, ls []string) ([]string, bool) {
		if f == OTLP {
			return replaceIn(ls, 2, `"timeUnixNano":"1`, `"timeUnixNano":"2`)
		}
		return replaceIn(ls, 2, `"ts":"2026`, `"ts":"2025`)
	}},
	{"claims full on a log that fails", Overclaims, nil}, // run apart: it needs a log level
	{"duplicate key", Unreadable, func(f Format, ls []string) ([]string, bool) {
		i := callLine(ls)
		if f == OTLP {
			return replaceIn(ls, i, `{"resourceLogs":`, `{"resourceLogs":[],"resourceLogs":`)
		}
		return replaceIn(ls, i, `"verdict":"allow"`, `"verdict":"deny","verdict":"allow"`)
	}},
	{"repeated", Repeated, func(_ Format, ls []string) ([]string, bool) {
		return append(append([]string(nil), ls...), ls[5]), true
	}},
	{"invented seq", Invented, func(f Format, ls []string) ([]string, bool) {
		if f == OTLP {
			return appendEdited(ls, 5, `"bailiff.seq","value":{"intValue":"5"}`, `"bailiff.seq","value":{"intValue":"500"}`)
		}
		return appendEdited(ls, 5, `"seq":5,`, `"seq":500,`)
	}},
	{"another log", Invented, func(f Format, ls []string) ([]string, bool) {
		return flipHex(ls, 4, logKey(f), true)
	}},
	{"junk line", Unreadable, func(_ Format, ls []string) ([]string, bool) {
		return append(append([]string(nil), ls[:3]...), append([]string{"not json\n"}, ls[3:]...)...), true
	}},
}

// appendEdited appends a copy of line i with old replaced by new.
func appendEdited(ls []string, i int, old, new string) ([]string, bool) {
	if !strings.Contains(ls[i], old) {
		return nil, false
	}
	return append(append([]string(nil), ls...), strings.Replace(ls[i], old, new, 1)), true
}

// TestEditsCaught: every way of dropping, altering, adding or repeating
// an event is caught, in every format, and named as what it is.
func TestEditsCaught(t *testing.T) {
	for _, f := range Formats {
		for _, e := range edits {
			if e.do == nil {
				continue
			}
			t.Run(string(f)+"/"+e.name, func(t *testing.T) {
				l, _ := logOf(t, fixture, Full)
				ls := lines(exported(t, f, l))
				changed, ok := e.do(f, ls)
				if !ok {
					t.Fatalf("the edit found nothing to change in the %s export", f)
				}
				res := check(t, []byte(strings.Join(changed, "")), l)
				if !res.Differs() || res.Counts[e.what] == 0 || len(res.Differences) == 0 {
					t.Fatalf("not caught as %s: %+v", e.what, res)
				}
				if first := res.Differences[0]; first.What != e.what {
					t.Errorf("the first difference named is %s (%s), want %s", first.What, first, e.what)
				}
			})
		}
	}
}

func hashKey(f Format) string {
	if f == OTLP {
		return `"bailiff.hash"`
	}
	return `"hash"`
}

func logKey(f Format) string {
	if f == OTLP {
		return `"bailiff.log"`
	}
	return `"log"`
}

var hex64 = regexp.MustCompile(`[0-9a-f]{64}`)

// flipHex changes one digit of the 64-hex value after key in line i: in
// place, or (add) in a copy appended to the copy.
func flipHex(ls []string, i int, key string, add bool) ([]string, bool) {
	at := strings.Index(ls[i], key)
	if at < 0 {
		return nil, false
	}
	loc := hex64.FindStringIndex(ls[i][at:])
	if loc == nil {
		return nil, false
	}
	j := at + loc[0]
	c := "0"
	if ls[i][j] == '0' {
		c = "1"
	}
	out := append([]string(nil), ls...)
	changed := ls[i][:j] + c + ls[i][j+1:]
	if add {
		return append(out, changed), true
	}
	out[i] = changed
	return out, true
}

// TestClaims: an event may claim less than the log supports, never more.
func TestClaims(t *testing.T) {
	for _, f := range Formats {
		failing, _ := logOf(t, fixture, None) // as verify --export sees a log with findings
		full := exported(t, f, Log{Name: failing.Name, R: failing.R, Level: Full, Records: failing.Records, Root: failing.Root})
		res := check(t, full, failing)
		if res.Counts[Overclaims] != int(failing.Records) || res.Differences[0].What != Overclaims {
			t.Errorf("%s: events claiming full on a log with findings: %+v", f, res.Counts)
		}
		clean, _ := logOf(t, fixture, Full)
		for _, lvl := range []Level{None, Chain} {
			weaker := exported(t, f, Log{Name: clean.Name, R: clean.R, Level: lvl, Records: clean.Records, Root: clean.Root})
			if res := check(t, weaker, clean); res.Differs() {
				t.Errorf("%s: events claiming %s on a clean log: %+v", f, lvl, res.Differences)
			}
			clean.R.(*bytes.Reader).Seek(0, 0)
		}
	}
}

// TestManyLogs: the events of two logs in one copy, in any order, match
// the two; each event is found by the log it names, not by its place.
func TestManyLogs(t *testing.T) {
	a, _ := logOf(t, fixture, Full)
	b, _ := logOf(t, "../fixtures/chain/good_web.jsonl", Full)
	out := exported(t, JSONL, a, b)
	ls := lines(out)
	for i, j := 0, len(ls)-1; i < j; i, j = i+1, j-1 {
		ls[i], ls[j] = ls[j], ls[i]
	}
	if res := check(t, []byte(strings.Join(ls, "")), a, b); res.Differs() || res.Records != a.Records+b.Records {
		t.Fatalf("two logs' events, reversed: %+v", res)
	}
	// Checked against one log only, the other's events are invented.
	res := check(t, out, a)
	if res.Counts[Invented] != int(b.Records) || res.Counts[Dropped] != 0 {
		t.Fatalf("against one of the two logs: %+v", res.Counts)
	}
}

// TestLogChanged: a log whose records are not the ones verified is an
// error, not a comparison with whatever it now holds.
func TestLogChanged(t *testing.T) {
	a, _ := logOf(t, fixture, Full)
	out := exported(t, JSONL, a)
	b, _ := logOf(t, "../fixtures/chain/good_web.jsonl", Full)
	a.Root = b.Root
	a.R.(*bytes.Reader).Seek(0, 0)
	if _, err := Check(bytes.NewReader(out), int64(len(out)), []Log{a}); err == nil || !strings.Contains(err.Error(), "changed since it was verified") {
		t.Errorf("Check of a log whose root is not the verified one: %v", err)
	}
	a.R.(*bytes.Reader).Seek(0, 0)
	if _, err := Write(&bytes.Buffer{}, JSONL, []Log{a}); err == nil || !strings.Contains(err.Error(), "changed since it was verified") {
		t.Errorf("Write of a log whose root is not the verified one: %v", err)
	}
	a.Records += 5
	a.R.(*bytes.Reader).Seek(0, 0)
	if _, err := Write(&bytes.Buffer{}, JSONL, []Log{a}); err == nil {
		t.Error("Write of a log shorter than verified: no error")
	}
}

// TestMixedFormats: a copy is of one format; an event of another in it is
// named, not silently compared.
func TestMixedFormats(t *testing.T) {
	a, _ := logOf(t, fixture, Full)
	ls := lines(exported(t, JSONL, a))
	ls[3] = lines(exported(t, OTLP, a))[3]
	res := check(t, []byte(strings.Join(ls, "")), a)
	if res.Counts[Unreadable] != 1 || res.Counts[Dropped] != 1 || !strings.Contains(res.Differences[0].Detail, "otlp event in a copy of jsonl events") {
		t.Fatalf("a copy of mixed formats: %+v", res)
	}
}

// FuzzCheck: any copy is read without a panic, and one that Check finds
// no difference in has exactly the log's events.
func FuzzCheck(f *testing.F) {
	l, _ := logOf(f, fixture, Full)
	l.Records = 4 // seeds of a few KB keep the fuzzer's mutations fast
	l.Root = rootOf(f, l, 4)
	for _, format := range Formats {
		out := exported(f, format, l)
		f.Add(out)
		ls := lines(out)
		f.Add([]byte(strings.Join(ls[1:], "")))
	}
	f.Add([]byte("{}\n[]\n\"x\"\n{\"log\":1,\"line\":2}\n"))
	f.Fuzz(func(t *testing.T, copied []byte) {
		l.R.(*bytes.Reader).Seek(0, 0)
		res, err := Check(bytes.NewReader(copied), int64(len(copied)), []Log{l})
		if err != nil {
			t.Fatal(err) // the log is the one verified: only the copy varies
		}
		if !res.Differs() && res.Events != int(l.Records) {
			t.Fatalf("no difference found, but %d events for %d records", res.Events, l.Records)
		}
	})
}

// TestNoReplacementCharacters: a line whose text a decoder would change
// (invalid UTF-8, a lone surrogate, both read as U+FFFD) is not taken for
// an event whose record holds U+FFFD: its bytes would not hash to it.
func TestNoReplacementCharacters(t *testing.T) {
	var data bytes.Buffer
	w := chain.NewWriter(&data, chain.None)
	for i, body := range []any{map[string]string{"server": "s"}, map[string]string{"tool": "t\ufffd", "note": "a\ufffdb"}} {
		if _, err := w.Append(time.Unix(int64(i+1), 0), "s1", chain.KindSession, body); err != nil {
			t.Fatal(err)
		}
	}
	l := Log{Name: "mem", R: bytes.NewReader(data.Bytes()), Level: Full, Records: 2, Root: rootOf(t, Log{R: bytes.NewReader(data.Bytes())}, 2)}
	for _, f := range Formats {
		out := exported(t, f, l)
		if res := check(t, out, l); res.Differs() {
			t.Fatalf("%s: the copy as written: %+v", f, res.Differences)
		}
		for _, bad := range []string{"\xff", `\udead`, "\xed\xa0\x80"} {
			changed := bytes.ReplaceAll(out, []byte("\ufffd"), []byte(bad))
			if res := check(t, changed, l); !res.Differs() {
				t.Errorf("%s: U+FFFD written as %q matches", f, bad)
			}
		}
	}
}

// TestManyDifferencesBounded: a copy of a hundred thousand bad lines is
// counted in full and listed in part.
func TestManyDifferencesBounded(t *testing.T) {
	l, _ := logOf(t, fixture, Full)
	out := exported(t, JSONL, l)
	junk := bytes.Repeat([]byte("1\n"), 100_000)
	copied := append(append([]byte(nil), out...), junk...)
	res := check(t, copied, l)
	if res.Counts[Unreadable] != 100_000 || len(res.Differences) != MaxListed || res.Differences[0].Line != int(l.Records)+1 {
		t.Fatalf("100000 bad lines: %d counted, %d listed, the first at line %d", res.Counts[Unreadable], len(res.Differences), res.Differences[0].Line)
	}
	rep := append(append([]byte(nil), out...), bytes.Repeat([]byte(lines(out)[2]), 10_000)...)
	res = check(t, rep, l)
	if res.Counts[Repeated] != 10_000 || len(res.Differences) != MaxListed {
		t.Fatalf("an event repeated 10000 times: %d counted, %d listed", res.Counts[Repeated], len(res.Differences))
	}
}

// TestTailClaims: a tail claims Chain, or nothing after a prefix with
// findings; a line that is not the next link gives no event.
func TestTailClaims(t *testing.T) {
	_, data := logOf(t, fixture, Full)
	ls := lines(data)
	for _, prefix := range []Level{Full, None} {
		l := Log{Name: "prefix", R: bytes.NewReader([]byte(strings.Join(ls[:3], ""))), Level: prefix, Records: 3}
		l.Root = rootOf(t, l, 3)
		l.R.(*bytes.Reader).Seek(0, 0)
		ends, err := Write(io.Discard, JSONL, []Log{l})
		if err != nil {
			t.Fatal(err)
		}
		tail := ends[0]
		if prefix == None {
			tail.Level = None
		}
		if _, err := tail.Next(nil, []byte(strings.TrimSuffix(ls[4], "\n"))); err == nil {
			t.Fatal("a record that skips one: no error")
		}
		ev, err := tail.Next(nil, []byte(strings.TrimSuffix(ls[3], "\n")))
		want := `"verified":"chain"`
		if prefix == None {
			want = `"verified":"none"`
		}
		if err != nil || !strings.Contains(string(ev), want) {
			t.Fatalf("after a %s prefix: %v %s", prefix, err, ev)
		}
	}
}
