package jsontext

import (
	"encoding/json"
	"strings"
	"testing"
)

type caseAnswer struct {
	ID     string            `json:"id"`
	Answer string            `json:"answer"`
	Sig    *caseSig          `json:"signature,omitempty"`
	Args   map[string]any    `json:"args"`
	Notes  []caseSig         `json:"notes"`
	Extra  map[string]string `json:"-"`
}

type caseSig struct {
	Key string `json:"key"`
}

// Go decodes a case variant of a field's name into the field, the last
// one winning; every other reader sees two keys. Each spelling below
// would be read by Go as something another reader does not see.
func TestExactFieldCase(t *testing.T) {
	refused := map[string]string{
		`{"id":"a","answer":"decline","ANSWER":"approve"}`: `"ANSWER"`,
		`{"id":"a","anſwer":"approve"}`:                    `"anſwer"`,
		`{"id":"a","signature":{"key":"x","KEY":"y"}}`:     `in signature`,
		`{"id":"a","notes":[{"key":"x"},{"Key":"y"}]}`:     `in notes[1]`,
		`{"ID":"a"}`: `"ID"`,
		`{"id":"a","answer":"approve","Answer":"approve","args":{}}`:   `"Answer"`,
		"{\"id\":\"a\",\"answer\":\"decline\",\"\\u0041nswer\":\"x\"}": `"Answer"`,
	}
	for text, want := range refused {
		err := ExactFieldCase([]byte(text), &caseAnswer{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", text, err, want)
		}
		// The precondition: Go does read the variant as the field.
		var a caseAnswer
		if json.Unmarshal([]byte(text), &a) != nil {
			t.Errorf("%s: Go refuses it, so the case check is not what stops it", text)
		}
	}
	for _, text := range []string{
		`{"id":"a","answer":"approve"}`,
		`{"id":"a","args":{"To":"x","to":"y","ANSWER":"z"}}`, // a map's keys are its own
		`{"id":"a","unknown":1,"Unknown":2}`,                 // no field: the decoder's to judge
		`not json`,
	} {
		if err := ExactFieldCase([]byte(text), &caseAnswer{}); err != nil {
			t.Errorf("%s: %v, want it accepted", text, err)
		}
	}
}

type caseRef struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

type caseEmbeds struct {
	ID string `json:"id"`
	caseRef
	Shadow *caseSig
}

// TestExactFieldCaseEmbedded: an embedded struct's fields are the outer
// object's keys, as Go decodes them, so a case variant of one is refused
// as of any other field.
func TestExactFieldCaseEmbedded(t *testing.T) {
	for text, want := range map[string]string{
		`{"id":"a","server":"mail","Server":"evil"}`: `"Server"`,
		`{"id":"a","TOOL":"x"}`:                      `"TOOL"`,
		`{"id":"a","Shadow":{"KEY":"x"}}`:            `in Shadow`,
	} {
		if err := ExactFieldCase([]byte(text), &caseEmbeds{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", text, err, want)
		}
		var v caseEmbeds
		if json.Unmarshal([]byte(text), &v) != nil {
			t.Errorf("%s: Go refuses it, so the case check is not what stops it", text)
		}
	}
	if err := ExactFieldCase([]byte(`{"id":"a","server":"mail","tool":"send"}`), &caseEmbeds{}); err != nil {
		t.Errorf("exact keys refused: %v", err)
	}
}

// FuzzExactFieldCase: any text, read against a struct with nested
// structs, maps and slices, is judged without a panic, and text it
// accepts that Go decodes has no key Go would fold onto a field.
func FuzzExactFieldCase(f *testing.F) {
	for _, s := range []string{`{"id":"a","ANSWER":"x"}`, `{"notes":[{"KEY":1}]}`, `{"args":{"A":{"b":[1]}}}`, `[{"id":1}]`, `{"signature":null}`, `"x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if ExactFieldCase([]byte(text), &caseAnswer{}) != nil {
			return
		}
		var top map[string]any
		if json.Unmarshal([]byte(text), &top) != nil {
			return
		}
		for k := range top {
			for _, name := range []string{"id", "answer", "signature", "args", "notes"} {
				if k != name && strings.EqualFold(k, name) {
					t.Fatalf("accepted %q, whose key %q Go reads as %q", text, k, name)
				}
			}
		}
	})
}
