package engine

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// fastSeeds are inputs at the edges of what the fast pass takes.
var fastSeeds = []string{
	`{}`, `[]`, `{"a":1}`, ` {"a" : [1, 2.5, -0, 1e10, -1.5E-3, true, false, null, "x"]} `,
	`{"text":"caf\u00e9 \"quoted\" \\ \/ \b\f\n\r\t","content":[{"type":"text","text":"hi"}]}`,
	`{"a":1,"a":2}`, `{"a":1,}`, `[1,]`, `01`, `-`, `1.`, `.5`, `1e`, `+1`, `"\ud83d\ude00"`, `"\ud800"`,
	"\"\xff\"", "\"\x01\"", `"\u00zz"`, `"\x"`, `truex`, `[true false]`, `{"a" 1}`, `{1:2}`, `nul`,
	strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
	strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
	"\ufeff{}", `{"a":"\u0000"}`, "{\"a\":\"\u2028\"}", `"ok" "trailing"`, `123456789012345678901234567890`,
}

// TestDecodeFastAgrees: every seed decodes the same both ways wherever
// the fast pass answers, and the fast pass answers for the plain inputs
// a gateway sees (so the speed is not lost to the reference).
func TestDecodeFastAgrees(t *testing.T) {
	for _, s := range fastSeeds {
		checkFast(t, []byte(s))
	}
	for _, s := range []string{`{"a":1}`, `{"text":"caf\u00e9 \"q\""}`, `[1,-2.5e3,true,null,"x"]`, `"é"`} {
		if _, ok := decodeFast([]byte(s)); !ok {
			t.Errorf("the fast pass left %s to the reference", s)
		}
	}
	for _, s := range []string{`{"a":1,"a":2}`, `"\ud800"`, "\"\xff\""} {
		if _, ok := decodeFast([]byte(s)); ok {
			t.Errorf("the fast pass took %q, which the reference must decide", s)
		}
	}
}

func checkFast(t *testing.T, raw []byte) {
	t.Helper()
	v, ok := decodeFast(raw)
	ref, err := decodeReference(raw)
	if !ok {
		return
	}
	if err != nil {
		t.Fatalf("%q: the fast pass took what the reference refuses (%v): %#v", raw, err, v)
	}
	if !reflect.DeepEqual(v, ref) {
		t.Fatalf("%q: fast %#v, reference %#v", raw, v, ref)
	}
}

// FuzzDecodeFast holds the fast pass to the reference: wherever it
// answers, the reference answers the same value, with no error.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(OutputJSON("From: a@b.example\nhi", []any{map[string]any{"type": "text", "text": "x"}}, json.Number("1"))))
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkFast(t, raw)
	})
}

// BenchmarkOutputFromJSON reads back an output of about 2 KB as the
// evidence store holds it: mail text, its newlines and quotes escaped.
func BenchmarkOutputFromJSON(b *testing.B) {
	line := "Subject: \"Q3\" numbers, see https://corp.example/q3\tand reply to bob@corp.example — thanks\n"
	raw := OutputJSON(strings.Repeat(line, 2048/len(line)), []any{map[string]any{"type": "text", "text": "x"}}, nil)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OutputFromJSON(raw); err != nil {
			b.Fatal(err)
		}
	}
}
