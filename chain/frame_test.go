package chain

import (
	"encoding/json"
	"testing"
	"time"
)

// stringEndByteByByte is the scan stringEnd replaced: the reference.
func stringEndByteByByte(b []byte) int {
	if len(b) == 0 || b[0] != '"' {
		return -1
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// FuzzStringEnd: stringEnd finds the end a byte-by-byte scan finds.
func FuzzStringEnd(f *testing.F) {
	for _, s := range []string{`"a"`, `"a\"b"`, `"a\\"b`, `"\\\"x"`, `"\`, `"`, `x"`, `"ab\\\\"`, `""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := stringEnd(b), stringEndByteByByte(b); got != want {
			t.Fatalf("stringEnd(%q) = %d, the scan says %d", b, got, want)
		}
	})
}

// FuzzFrameString: a session id decodes as encoding/json decodes it, with
// or without interning.
func FuzzFrameString(f *testing.F) {
	for _, s := range []string{`"s1"`, `"a\"b"`, `"\u0041"`, `"é"`, "\"\x01\"", `"a\nb"`, `""`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	var in interner
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 2 || stringEnd(b) != len(b) {
			return // the frame only hands over a whole string
		}
		var want string
		werr := json.Unmarshal(b, &want)
		for _, intern := range []*interner{nil, &in} {
			got, plain, err := frameString(b, intern)
			if (err == nil) != (werr == nil) || got != want {
				t.Fatalf("frameString(%q) = %q, %v; encoding/json: %q, %v", b, got, err, want, werr)
			}
			if plain && string(appendString(nil, got)) != string(b) {
				t.Fatalf("frameString(%q) says plain, but it encodes as %s", b, appendString(nil, got))
			}
		}
	})
}

// FuzzParseTS: what parseTS takes, time.Parse takes as the same instant,
// and every ts in canonical form parseTS takes itself.
func FuzzParseTS(f *testing.F) {
	for _, s := range []string{"2026-11-03T09:00:00.000000000Z", "2024-02-29T23:59:59.999999999Z", "2023-02-29T00:00:00.000000000Z",
		"0000-01-01T00:00:00.000000000Z", "9999-12-31T23:59:59.999999999Z", "-001-01-01T00:00:00.000000000Z", "2026-13-01T00:00:00.000000000Z"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parseTS(b)
		want, err := time.Parse(TimeFormat, string(b))
		if ok && (err != nil || !got.Equal(want) || got.Location() != want.Location()) {
			t.Fatalf("parseTS(%q) = %v; time.Parse: %v, %v", b, got, want, err)
		}
		if ok && got.Format(TimeFormat) != string(b) {
			t.Fatalf("parseTS took %q, which formats as %s", b, got.Format(TimeFormat))
		}
		if !ok && err == nil && want.Format(TimeFormat) == string(b) {
			t.Fatalf("parseTS refuses canonical %q", b)
		}
	})
}

// TestInternerBounded: the table starts over instead of growing with the
// number of sessions, and still hands back equal strings.
func TestInternerBounded(t *testing.T) {
	var in interner
	for i := range 3 * maxInterned {
		id := []byte("session-" + string(rune('a'+i%26)) + time.Duration(i).String())
		if got := in.get(id); got != string(id) {
			t.Fatalf("get(%q) = %q", id, got)
		}
		if len(in.m) > maxInterned {
			t.Fatalf("%d ids kept, bound %d", len(in.m), maxInterned)
		}
	}
}
