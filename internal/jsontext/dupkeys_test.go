package jsontext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestNoDuplicateKeys(t *testing.T) {
	deep := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	for _, c := range []struct {
		in   string
		want string
	}{
		{`{"session":"demo","call":"c1","label":"attack"}`, ""},
		{`{"session":"demo","call":"c1","call":"c3","label":"attack"}`, `duplicate key "call" at byte 30`},
		{`{"call":"c1","c\u0061ll":"c3"}`, `duplicate key "call" at byte 13`},
		{`{"a":{"b":1,"b":2}}`, `duplicate key "b" at byte 12`},
		{`[{"a":1},{"a":1},[{"x":[1,{"a":1,"a":1}]}]]`, `duplicate key "a" at byte 33`},
		// A key repeated as a value, or in sibling objects, is no duplicate.
		{`{"a":"a","b":{"a":"b"},"c":["a","a"],"d":{"a":{"a":1}}}`, ""},
		{`{"k\"":1,"k\\":2,"k\\\"":3}`, ""},
		{`{"k\\\"":1,"k\\\"":2}`, `duplicate key "k\\\"" at byte 11`},
		{`{"": 1, "" : 2}`, `duplicate key "" at byte 8`},
		// Every value of a file of JSON lines is walked.
		{"{\"a\":1}\n{\"a\":1,\"a\":2}\n", `duplicate key "a" at byte 15`},
		{deep, ""},
		{"[" + deep + "]", "nested deeper than 64 levels at byte 64"},
		// Not JSON: the caller's decoder says what is wrong.
		{`{"a":1,`, ""},
		{`{"a":1,"a"`, `duplicate key "a" at byte 7`},
		{``, ""},
	} {
		got := ""
		if err := NoDuplicateKeys([]byte(c.in)); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("NoDuplicateKeys(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzNoDuplicateKeys checks the walk never panics and that text it
// passes decodes without losing a key: a key given twice would be one
// fewer key once decoded.
func FuzzNoDuplicateKeys(f *testing.F) {
	for _, s := range []string{
		`{"session":"demo","call":"c1","call":"c3"}`,
		`{"call":1,"c\u0061ll":2}`,
		`{"a":{"b":[{"c":1},{"c":2}],"d":"b"}}`,
		`[[{"a":1}],{"a":{"a":{"a":1,"b":2}}}]`,
		`{"k\\\"":1,"k\"":2}`,
		"{\"a\":1}\n{\"a\":1}",
		`"just a string"`,
		`{"a":`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		err := NoDuplicateKeys(raw)
		if err != nil || !json.Valid(raw) {
			return
		}
		// Numbers as written: 1E700 is valid JSON no float64 holds.
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			t.Fatalf("valid text %q does not decode", raw)
		}
		text, decoded := textKeys(raw), countKeys(v)
		if text != decoded {
			t.Fatalf("NoDuplicateKeys passed %q but decoding keeps %d of its %d keys", raw, decoded, text)
		}
	})
}

// textKeys counts the object keys written in valid JSON text, by a
// different road than NoDuplicateKeys: in valid JSON a key is exactly a
// string followed by a colon.
func textKeys(raw []byte) int {
	n := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		for i++; raw[i] != '"'; i++ {
			if raw[i] == '\\' {
				i++
			}
		}
		if rest := bytes.TrimLeft(raw[i+1:], " \t\r\n"); len(rest) > 0 && rest[0] == ':' {
			n++
		}
	}
	return n
}

// countKeys counts the object keys of a decoded value.
func countKeys(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			n += 1 + countKeys(x)
		}
	case []any:
		for _, x := range v {
			n += countKeys(x)
		}
	}
	return n
}
