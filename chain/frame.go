package chain

import (
	"bytes"
	"encoding/json"
	"time"
)

// The frame of every record is read on the one goroutine that checks the
// chain, so these hand parsers take the common case without allocating
// or reflecting, and hand anything else to the general parser, whose
// answer (and error) is the reference. Their fuzz targets check they
// agree with it.

// stringEnd returns the length of the JSON string b starts with, through
// its closing quote, or -1. It jumps from quote to quote: a quote ends
// the string unless an odd run of backslashes comes before it.
func stringEnd(b []byte) int {
	if len(b) == 0 || b[0] != '"' {
		return -1
	}
	for i := 1; ; {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1
		}
		j := i + q
		k := j - 1
		for k >= 1 && b[k] == '\\' {
			k--
		}
		if (j-1-k)%2 == 0 {
			return j + 1
		}
		i = j + 1
	}
}

// frameString decodes a JSON string (with its quotes). A string of
// printable ASCII without escapes is its own bytes, and plain says so:
// it is then also its own canonical encoding. intern, when set, gives
// back an equal string already made.
func frameString(quoted []byte, intern *interner) (s string, plain bool, err error) {
	in := quoted[1 : len(quoted)-1]
	for _, c := range in {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			err := json.Unmarshal(quoted, &s)
			return s, false, err
		}
	}
	if intern != nil {
		return intern.get(in), true, nil
	}
	return string(in), true, nil
}

// interner hands out one string per distinct session id: a log repeats
// each id in every record of its session.
type interner struct{ m map[string]string }

// maxInterned bounds the table: a log of many short sessions starts over
// rather than keeping every id.
const maxInterned = 4096

func (t *interner) get(b []byte) string {
	if s, ok := t.m[string(b)]; ok {
		return s
	}
	if t.m == nil || len(t.m) >= maxInterned {
		t.m = make(map[string]string)
	}
	s := string(b)
	t.m[s] = s
	return s
}

// parseTS reads a ts in TimeFormat. It reports false for anything it
// does not take itself (a bad digit, a date out of range), and the
// caller then asks time.Parse. What it takes is canonical: those digits
// are what formatting the time writes.
func parseTS(b []byte) (time.Time, bool) {
	if len(b) != len(TimeFormat) || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[19] != '.' || b[29] != 'Z' {
		return time.Time{}, false
	}
	ok := true
	num := func(from, to int) int {
		n := 0
		for _, c := range b[from:to] {
			if c < '0' || c > '9' {
				ok = false
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(0, 4), num(5, 7), num(8, 10)
	hour, minute, sec, nsec := num(11, 13), num(14, 16), num(17, 19), num(20, 29)
	if !ok || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Day() != day {
		return time.Time{}, false // the 30th of February, normalized into March
	}
	return t, true
}

// reservedKey returns the first top-level key of a valid JSON object that
// is one of the frame's keys, or "".
func reservedKey(obj []byte) string {
	found := ""
	eachTopKey(obj, func(k []byte, _ int) bool {
		switch string(k) {
		case "v", "seq", "ts", "session", "kind", "prev", "hash":
			found = string(k)
			return false
		}
		return true
	})
	return found
}

// RawField returns the bytes of the value of a top-level key of a JSON
// object, as stored. For a body DecodeBody accepted, that is exactly
// encoding/json's encoding of the decoded value, so its digest can be
// taken without encoding it again.
func RawField(obj []byte, key string) ([]byte, bool) {
	var raw []byte
	eachTopKey(obj, func(k []byte, at int) bool {
		if string(k) != key {
			return true
		}
		if end := valueEnd(obj, at); end >= 0 {
			raw = obj[at:end]
		}
		return false
	})
	return raw, raw != nil
}

// eachTopKey calls fn with each top-level key of a JSON object and where
// its value starts, until fn returns false. Invalid JSON ends the walk.
// The key is valid only during the call: most keys are the object's own
// bytes, so walking the keys allocates nothing.
func eachTopKey(obj []byte, fn func(key []byte, at int) bool) {
	depth := 0
	for i := 0; i < len(obj); i++ {
		switch obj[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			n := stringEnd(obj[i:])
			if n < 0 {
				return
			}
			// At depth 1 a string after '{' or ',' and before ':' is a key.
			if depth == 1 && (obj[i-1] == '{' || obj[i-1] == ',') && i+n < len(obj) && obj[i+n] == ':' {
				k := obj[i+1 : i+n-1]
				if bytes.IndexByte(k, '\\') >= 0 {
					// "ki\u006ed" is "kind" to every JSON parser.
					u := string(k)
					_ = json.Unmarshal(obj[i:i+n], &u)
					k = []byte(u)
				}
				if !fn(k, i+n+1) {
					return
				}
			}
			i += n - 1
		}
	}
}

// valueEnd returns where the JSON value starting at obj[start] ends: at
// the comma or brace that closes it at its own depth.
func valueEnd(obj []byte, start int) int {
	depth := 0
	for i := start; i < len(obj); i++ {
		switch obj[i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		case '"':
			n := stringEnd(obj[i:])
			if n < 0 {
				return -1
			}
			i += n - 1
		}
	}
	return -1
}
