package jsontext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// maxDepth bounds the nesting NoDuplicateKeys walks: no file bailiff
// reads nests near this deep, and deeper text is refused rather than
// walked (the same bound as tool-call arguments in engine).
const maxDepth = 64

// level is one open object or array of the walk.
type level struct {
	keys    map[string]bool // nil for an array
	wantKey bool            // in an object, the next string is a key
}

// DuplicateKeyError is a key given twice in one object; Offset is the
// byte where the second one starts, for readers that name a line.
type DuplicateKeyError struct {
	Key    string
	Offset int
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("duplicate key %q at byte %d", e.Key, e.Offset)
}

// NoDuplicateKeys refuses JSON text in which an object, at any depth,
// holds a key twice. Readers disagree on such text: Go keeps the last
// value, others the first, so two tools reading one file could act on
// different values. Keys are compared as decoded, so "call" and
// "c\u0061ll" are the same key. Every value of the text is walked (a
// file of JSON lines may be given whole). Text that is not JSON is left
// to the caller's decoder, which says better what is wrong: it returns
// nil at the first syntax error, having refused any duplicate before it.
func NoDuplicateKeys(raw []byte) error {
	return noDuplicates(raw, false)
}

// NoCaseDuplicateKeys is NoDuplicateKeys with keys compared regardless of
// case, as Go matches them to struct fields: for text read into several
// structs, where ExactFieldCase would need each one, "type" and "TYPE"
// in one object are refused as one key given twice.
func NoCaseDuplicateKeys(raw []byte) error {
	return noDuplicates(raw, true)
}

func noDuplicates(raw []byte, fold bool) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var open []*level
	for {
		t, err := dec.Token()
		if err != nil {
			return nil // end of text, or not JSON: the decoder's to say
		}
		var top *level
		if len(open) > 0 {
			top = open[len(open)-1]
		}
		if k, ok := t.(string); ok && top != nil && top.wantKey {
			orig := k
			if fold {
				// Upper then lower case folds 'ſ' and the Kelvin sign
				// with 's' and 'k', as Go's field matching does.
				k = strings.ToLower(strings.ToUpper(k))
			}
			if top.keys[k] {
				return &DuplicateKeyError{Key: orig, Offset: keyStart(raw, int(dec.InputOffset()))}
			}
			top.keys[k] = true
			top.wantKey = false
			continue
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			if len(open) >= maxDepth {
				return fmt.Errorf("nested deeper than %d levels at byte %d", maxDepth, dec.InputOffset()-1)
			}
			l := &level{}
			if t == json.Delim('{') {
				l.keys, l.wantKey = map[string]bool{}, true
			}
			open = append(open, l)
			continue
		case json.Delim('}'), json.Delim(']'):
			open = open[:len(open)-1]
			if len(open) == 0 {
				continue
			}
			top = open[len(open)-1]
		}
		// A whole value ended: in an object, a key is due next.
		if top != nil && top.keys != nil {
			top.wantKey = true
		}
	}
}

// keyStart finds the opening quote of the key whose closing quote ends
// just before end: the nearest quote before it that no odd run of
// backslashes escapes.
func keyStart(raw []byte, end int) int {
	for i := end - 2; i >= 0; i-- {
		if raw[i] != '"' {
			continue
		}
		k := i - 1
		for k >= 0 && raw[k] == '\\' {
			k--
		}
		if (i-1-k)%2 == 0 {
			return i
		}
	}
	return end
}
