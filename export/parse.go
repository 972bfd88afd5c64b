package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"bailiff/internal/jsontext"
)

// parse reads one exported line as a JSON value, exactly. A key given
// twice is refused: a SIEM keeping the first would show another event than a
// reader keeping the last, and only one of them could be compared.
func parse(line []byte) (any, error) {
	// Text a decoder would change (invalid UTF-8, a lone surrogate, both
	// read as U+FFFD) could pass for an event whose line holds U+FFFD,
	// and would not hash to its record.
	if err := jsontext.CheckText(line); err != nil {
		return nil, err
	}
	if err := jsontext.NoDuplicateKeys(line); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, jsontext.PlainJSON(err, "")
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value on the line")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("not a JSON object")
	}
	return v, nil
}

// path walks v by object keys and array indexes; nil where there is
// nothing.
func path(v any, steps ...any) any {
	for _, s := range steps {
		switch s := s.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[s]
		case int:
			a, _ := v.([]any)
			if s >= len(a) {
				return nil
			}
			v = a[s]
		}
	}
	return v
}

// diff is the path of the first place where got and want differ, with
// the two values there; "" when they are equal. Objects compare by key,
// not order; numbers by their spelling.
func diff(got, want any, at string) (string, any, any) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return orRoot(at), got, want
		}
		for _, k := range sortedKeys(w) {
			if _, has := g[k]; !has {
				return at + "." + k, missing{}, w[k]
			}
			if d, gv, wv := diff(g[k], w[k], at+"."+k); d != "" {
				return d, gv, wv
			}
		}
		for _, k := range sortedKeys(g) {
			if _, ok := w[k]; !ok {
				return at + "." + k, g[k], missing{}
			}
		}
		return "", nil, nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return orRoot(at), got, want
		}
		for i := range min(len(g), len(w)) {
			label := fmt.Sprintf("%s[%d]", at, i)
			if k, ok := path(w[i], "key").(string); ok {
				label = fmt.Sprintf("%s[key=%s]", at, k) // an OTLP attribute, named
			}
			if d, gv, wv := diff(g[i], w[i], label); d != "" {
				return d, gv, wv
			}
		}
		if len(g) != len(w) {
			return orRoot(at) + " length", len(g), len(w)
		}
		return "", nil, nil
	}
	if gn, ok := got.(json.Number); ok {
		if wn, ok := want.(json.Number); ok && sameNumber(gn, wn) {
			return "", nil, nil
		}
	}
	if got != want {
		return orRoot(at), got, want
	}
	return "", nil, nil
}

// sameNumber compares two JSON numbers by value, exactly: 1.50 is 1.5
// and 15e-1, as any reader takes them.
func sameNumber(a, b json.Number) bool {
	if !modest(a) || !modest(b) {
		return a == b
	}
	x, okx := new(big.Rat).SetString(string(a))
	y, oky := new(big.Rat).SetString(string(b))
	return okx && oky && x.Cmp(y) == 0
}

// missing stands for a key one side does not have.
type missing struct{}

// shown are two different values as a difference names them: two
// strings around where they first differ (a record's line is long, and
// its start is the same), anything else as JSON, cut short.
func shown(got, want any) (string, string) {
	g, gok := got.(string)
	w, wok := want.(string)
	if !gok || !wok || len(g) <= 60 && len(w) <= 60 {
		return show(got), show(want)
	}
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	return window(g, i), window(w, i)
}

// window is s around byte i, as JSON, marked where it was cut.
func window(s string, i int) string {
	lo, hi := max(0, i-16), min(len(s), i+24)
	for lo > 0 && !utf8.RuneStart(s[lo]) {
		lo--
	}
	for hi < len(s) && !utf8.RuneStart(s[hi]) {
		hi++
	}
	b, _ := json.Marshal(s[lo:hi]) // a string always encodes
	out := string(b)
	if lo > 0 {
		out = fmt.Sprintf("(byte %d) ...%s", lo, out)
	}
	if hi < len(s) {
		out += "..."
	}
	return out
}

// show is a value as a difference names it: JSON, cut short.
func show(v any) string {
	if _, ok := v.(missing); ok {
		return "absent"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 60 {
		n := 57
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		return string(b[:n]) + "..."
	}
	return string(b)
}

func orRoot(at string) string {
	if at == "" {
		return "."
	}
	return at
}

// modest says whether a number is small enough to compare by value: an
// exponent like 1e999999999 would have big.Rat build a number of that
// many digits.
func modest(n json.Number) bool {
	if len(n) > 64 {
		return false
	}
	if i := strings.IndexAny(string(n), "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(string(n[i+1:]), "+"))
		return err == nil && exp > -400 && exp < 400
	}
	return true
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
