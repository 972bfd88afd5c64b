package audit

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// DecodeFast decodes a call body (chain.FastDecoder) without reflection, for the
// bodies in canonical form that make up nearly every log. It only ever
// says yes: a body it decodes must re-encode to exactly its bytes, and
// anything else (another shape, another type, an escape it does not
// read) is left to chain.DecodeGeneral, which then gives the same
// answer and error it always gave. FuzzDecodeFast holds what it decodes
// to what that path decodes.
func (out *CallBody) DecodeFast(body []byte) bool {
	var b CallBody
	if !scanObject(body, func(p *parser, key string) bool { return callField(p, key, &b) }) {
		return false
	}
	enc, ok := appendCallBody(make([]byte, 0, len(body)), &b)
	if !ok || !bytes.Equal(enc, body) {
		return false
	}
	*out = b
	return true
}

// DecodeFast is DecodeFast for a result body (chain.FastDecoder).
func (out *ResultBody) DecodeFast(body []byte) bool {
	var b ResultBody
	if !scanObject(body, func(p *parser, key string) bool { return resultField(p, key, &b) }) {
		return false
	}
	if !bytes.Equal(appendResultBody(make([]byte, 0, len(body)), &b), body) {
		return false
	}
	*out = b
	return true
}

func callField(p *parser, key string, b *CallBody) bool {
	var ok bool
	switch key {
	case "call":
		b.Call, ok = p.str()
	case "server":
		b.Server, ok = p.str()
	case "tool":
		b.Tool, ok = p.str()
	case "digest":
		b.Digest, ok = p.str()
	case "args":
		var v any
		if v, ok = p.value(0); ok {
			b.Args, ok = v.(map[string]any)
		}
	case "redacted":
		ok = p.array(func() bool {
			s, ok := p.str()
			b.Redacted = append(b.Redacted, s)
			return ok
		})
	case "resolved":
		b.Resolved = map[string]string{}
		ok = scanMembers(p, func(p *parser, k string) bool {
			s, ok := p.str()
			b.Resolved[k] = s
			return ok
		})
	case "elicit":
		b.Elicit, ok = p.literal("true", true)
	case "trace":
		b.Trace, ok = p.str()
	case "tainted_by":
		s := &Source{}
		b.TaintedBy = s
		ok = scanMembers(p, func(p *parser, k string) bool { return sourceField(p, k, s) })
	default:
		return decisionField(p, key, &b.Decision)
	}
	return ok
}

func decisionField(p *parser, key string, d *Decision) bool {
	var ok bool
	switch key {
	case "verdict":
		d.Verdict, ok = p.str()
	case "check":
		d.Check, ok = p.str()
	case "rule":
		d.Rule, ok = p.str()
	case "reason":
		d.Reason, ok = p.str()
	case "destination":
		d.Destination, ok = p.str()
	case "grant":
		d.Grant, ok = p.str()
	}
	return ok
}

func sourceField(p *parser, key string, s *Source) bool {
	var ok bool
	switch key {
	case "seq":
		var n int64
		n, ok = p.int()
		s.Seq = int(n)
	case "server":
		s.Server, ok = p.str()
	case "tool":
		s.Tool, ok = p.str()
	}
	return ok
}

func resultField(p *parser, key string, b *ResultBody) bool {
	var ok bool
	switch key {
	case "call":
		b.Call, ok = p.str()
	case "server":
		b.Server, ok = p.str()
	case "tool":
		b.Tool, ok = p.str()
	case "channel":
		b.Channel, ok = p.str()
	case "status":
		b.Status, ok = p.str()
	case "content":
		b.Content, ok = p.str()
	case "size":
		b.Size, ok = p.int()
	}
	return ok
}

// parser reads the canonical JSON MarshalBody writes: no whitespace, and
// only the escapes it writes (and \/); it refuses the rest, to the
// general path.
type parser struct {
	b []byte
	i int
}

// maxDepth bounds nesting, as the general path's decoder does.
const maxDepth = 1000

func scanObject(body []byte, field func(*parser, string) bool) bool {
	p := &parser{b: body}
	return scanMembers(p, field) && p.i == len(body)
}

// scanMembers reads an object, calling field with each key, the parser
// at its value.
func scanMembers(p *parser, field func(*parser, string) bool) bool {
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return true
	}
	for {
		k, ok := p.key()
		if !ok || !p.byte(':') || !field(p, k) {
			return false
		}
		if p.byte('}') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

func (p *parser) array(elem func() bool) bool {
	if !p.byte('[') {
		return false
	}
	if p.byte(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if p.byte(']') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

func (p *parser) byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) literal(word string, v bool) (bool, bool) {
	if bytes.HasPrefix(p.b[p.i:], []byte(word)) {
		p.i += len(word)
		return v, true
	}
	return false, false
}

// value reads any JSON value as the general path decodes it into an any
// (with UseNumber).
func (p *parser) value(depth int) (any, bool) {
	if p.i >= len(p.b) || depth > maxDepth {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '"':
		return p.str()
	case c == '{':
		m := map[string]any{}
		ok := scanMembers(p, func(p *parser, k string) bool {
			v, ok := p.value(depth + 1)
			m[k] = v
			return ok
		})
		return m, ok
	case c == '[':
		a := []any{}
		ok := p.array(func() bool {
			v, ok := p.value(depth + 1)
			a = append(a, v)
			return ok
		})
		return a, ok
	case c == 't':
		return p.literal("true", true)
	case c == 'f':
		return p.literal("false", false)
	case c == 'n':
		_, ok := p.literal("null", false)
		return nil, ok
	case c == '-' || '0' <= c && c <= '9':
		s := p.number()
		return json.Number(s), validNumber(s)
	}
	return nil, false
}

func (p *parser) number() string {
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if !('0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			break
		}
		p.i++
	}
	return string(p.b[start:p.i])
}

func (p *parser) int() (int64, bool) {
	s := p.number()
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && validNumber(s)
}

// str reads a string. Raw bytes are taken as they are: invalid UTF-8 or
// a raw control byte re-encodes differently and is refused by the
// comparison after.
func (p *parser) str() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	n := bytes.IndexByte(p.b[start:], '"')
	if n < 0 {
		return "", false
	}
	if e := bytes.IndexByte(p.b[start:start+n], '\\'); e >= 0 {
		p.i = start + e
		return p.escaped(start)
	}
	p.i = start + n + 1
	return string(p.b[start : start+n]), true
}

// key reads a member's name. The names of a record's own fields are
// given as constants, not copied, since every record has them; any
// other name is read as str reads it.
func (p *parser) key() (string, bool) {
	if p.i < len(p.b) && p.b[p.i] == '"' {
		if n := bytes.IndexByte(p.b[p.i+1:], '"'); n >= 0 {
			if k := fieldName(p.b[p.i+1 : p.i+1+n]); k != "" {
				p.i += n + 2
				return k, true
			}
		}
	}
	return p.str()
}

// fieldName is name as a constant when it is one of the fields of a
// call, result or source body; "" otherwise. The switch on a converted
// slice does not copy it.
func fieldName(name []byte) string {
	switch string(name) {
	case "call":
		return "call"
	case "server":
		return "server"
	case "tool":
		return "tool"
	case "digest":
		return "digest"
	case "args":
		return "args"
	case "verdict":
		return "verdict"
	case "check":
		return "check"
	case "rule":
		return "rule"
	case "reason":
		return "reason"
	case "status":
		return "status"
	case "content":
		return "content"
	case "size":
		return "size"
	case "seq":
		return "seq"
	}
	return ""
}

// escaped finishes a string that has escapes, from its start.
func (p *parser) escaped(start int) (string, bool) {
	out := append([]byte(nil), p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(out), true
		case c != '\\':
			out = append(out, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.b) {
			return "", false
		}
		e := p.b[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if p.i+4 > len(p.b) {
				return "", false
			}
			r, err := strconv.ParseUint(string(p.b[p.i:p.i+4]), 16, 16)
			if err != nil || utf8.RuneLen(rune(r)) < 0 {
				return "", false // a surrogate: the general path reads pairs
			}
			out = utf8.AppendRune(out, rune(r))
			p.i += 4
		default:
			return "", false
		}
	}
	return "", false
}
