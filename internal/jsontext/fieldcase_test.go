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
