package engine

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// decodeFast decodes one JSON value exactly as decodeReference does, in
// one pass over the bytes instead of encoding/json's token reader (which
// was a fifth of a full verify on a log of small outputs: docs/decisions.md,
// "Offline speed"). It takes only input it is sure of: anything else
// (an error of any kind, a duplicate key, nesting past maxDepth, a
// surrogate escape, bytes that are not UTF-8) answers ok false, and the
// reference decides, with its own error. FuzzDecodeFast holds the two to
// the same value wherever the fast one answers.
func decodeFast(raw []byte) (v any, ok bool) {
	d := fastDecoder{raw: raw}
	d.space()
	v, ok = d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(d.raw)
}

type fastDecoder struct {
	raw []byte
	i   int
}

func (d *fastDecoder) space() {
	for d.i < len(d.raw) {
		switch d.raw[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

var literals = [...]struct {
	text string
	v    any
}{{"true", true}, {"false", false}, {"null", nil}}

func (d *fastDecoder) value(depth int) (any, bool) {
	if depth > maxDepth || d.i >= len(d.raw) {
		return nil, false
	}
	switch c := d.raw[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		return d.text()
	case c == '-' || ('0' <= c && c <= '9'):
		return d.number()
	}
	for _, lit := range literals {
		if len(d.raw)-d.i >= len(lit.text) && string(d.raw[d.i:d.i+len(lit.text)]) == lit.text {
			d.i += len(lit.text)
			return lit.v, true
		}
	}
	return nil, false
}

func (d *fastDecoder) object(depth int) (any, bool) {
	d.i++ // {
	m := map[string]any{}
	d.space()
	if d.i < len(d.raw) && d.raw[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		d.space()
		if d.i >= len(d.raw) || d.raw[d.i] != '"' {
			return nil, false
		}
		k, ok := d.text()
		if !ok {
			return nil, false
		}
		if _, dup := m[k]; dup {
			return nil, false
		}
		d.space()
		if d.i >= len(d.raw) || d.raw[d.i] != ':' {
			return nil, false
		}
		d.i++
		d.space()
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[k] = v
		if more, ok := d.after('}'); !ok {
			return nil, false
		} else if !more {
			return m, true
		}
	}
}

func (d *fastDecoder) array(depth int) (any, bool) {
	d.i++ // [
	l := []any{}
	d.space()
	if d.i < len(d.raw) && d.raw[d.i] == ']' {
		d.i++
		return l, true
	}
	for {
		d.space()
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		l = append(l, v)
		if more, ok := d.after(']'); !ok {
			return nil, false
		} else if !more {
			return l, true
		}
	}
}

// after reads what follows a member or an element: a comma (more
// follow), the closing bracket (ok, no more), or anything else (not ok).
func (d *fastDecoder) after(closing byte) (more, ok bool) {
	d.space()
	if d.i >= len(d.raw) {
		return false, false
	}
	switch d.raw[d.i] {
	case ',':
		d.i++
		return true, true
	case closing:
		d.i++
		return false, true
	}
	return false, false
}

// number takes JSON's number grammar exactly, and keeps its text.
func (d *fastDecoder) number() (any, bool) {
	start := d.i
	if d.raw[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.raw) && d.raw[d.i] == '0':
		d.i++
	case d.digits() == 0:
		return nil, false
	}
	if d.i < len(d.raw) && d.raw[d.i] == '.' {
		d.i++
		if d.digits() == 0 {
			return nil, false
		}
	}
	if d.i < len(d.raw) && (d.raw[d.i] == 'e' || d.raw[d.i] == 'E') {
		d.i++
		if d.i < len(d.raw) && (d.raw[d.i] == '+' || d.raw[d.i] == '-') {
			d.i++
		}
		if d.digits() == 0 {
			return nil, false
		}
	}
	return json.Number(d.raw[start:d.i]), true
}

func (d *fastDecoder) digits() int {
	n := 0
	for d.i < len(d.raw) && '0' <= d.raw[d.i] && d.raw[d.i] <= '9' {
		d.i++
		n++
	}
	return n
}

// text reads a string whose bytes are UTF-8 and whose escapes name no
// surrogate; anything else is left to the reference.
func (d *fastDecoder) text() (string, bool) {
	d.i++ // "
	start := d.i
	for d.i < len(d.raw) {
		c := d.raw[d.i]
		switch {
		case c == '"':
			s := string(d.raw[start:d.i])
			d.i++
			return s, true
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			d.i++
		default:
			r, n := utf8.DecodeRune(d.raw[d.i:])
			if r == utf8.RuneError && n == 1 {
				return "", false
			}
			d.i += n
		}
	}
	return "", false
}

// escaped goes on with a string from its first escape, building its text.
// Bytes that stand for themselves are copied a run at a time (an output's
// text is mostly such runs between escaped newlines and quotes), into a
// strings.Builder, whose text becomes the string without another copy.
func (d *fastDecoder) escaped(start int) (string, bool) {
	var b strings.Builder
	b.Grow(min(len(d.raw)-start, 4<<10))
	b.Write(d.raw[start:d.i])
	for d.i < len(d.raw) {
		c := d.raw[d.i]
		switch {
		case plainByte(c):
			j := d.i + 1
			for j < len(d.raw) && plainByte(d.raw[j]) {
				j++
			}
			b.Write(d.raw[d.i:j])
			d.i = j
		case c == '"':
			d.i++
			return b.String(), true
		case c == '\\':
			if d.i+1 >= len(d.raw) {
				return "", false
			}
			e := d.raw[d.i+1]
			d.i += 2
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := d.hex4()
				if !ok || (0xD800 <= r && r <= 0xDFFF) {
					return "", false
				}
				b.WriteRune(r)
			default:
				return "", false
			}
		case c < 0x20:
			return "", false
		default:
			r, n := utf8.DecodeRune(d.raw[d.i:])
			if r == utf8.RuneError && n == 1 {
				return "", false
			}
			b.Write(d.raw[d.i : d.i+n])
			d.i += n
		}
	}
	return "", false
}

// plainByte tells whether c stands for itself inside a JSON string: ASCII,
// not a control character, a quote or a backslash.
func plainByte(c byte) bool {
	return c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\'
}

func (d *fastDecoder) hex4() (rune, bool) {
	if len(d.raw)-d.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.raw[d.i : d.i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	d.i += 4
	return r, true
}
