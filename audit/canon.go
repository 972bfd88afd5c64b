package audit

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The canonical form of a body is encoding/json's encoding of the values
// it decodes to (see chain.DecodeBody). Verify decodes every call and result
// record of a log, and encoding those back through reflection was a fifth
// of its time: these append the same bytes by hand for the two bodies a
// log is mostly made of. Anything they do not know how to encode exactly
// (a value of another type, a number literal encoding/json would refuse)
// makes them give up, and chain.MarshalBody falls back to encoding/json, so the
// bytes accepted never depend on which path ran. FuzzCanonicalBody holds
// them to chain.MarshalGeneral.

// AppendCanonical appends the body's canonical encoding (chain.Canonical).
func (b *CallBody) AppendCanonical(dst []byte) ([]byte, bool) { return appendCallBody(dst, b) }

// AppendCanonical appends the body's canonical encoding (chain.Canonical).
func (b *ResultBody) AppendCanonical(dst []byte) ([]byte, bool) {
	return appendResultBody(dst, b), true
}

func appendCallBody(dst []byte, b *CallBody) ([]byte, bool) {
	dst = appendKey(dst, '{', "call")
	dst = appendJSONString(dst, b.Call)
	if b.Server != "" {
		dst = appendJSONString(appendKey(dst, ',', "server"), b.Server)
	}
	dst = appendJSONString(appendKey(dst, ',', "tool"), b.Tool)
	var ok bool
	if dst, ok = appendValue(appendKey(dst, ',', "args"), b.Args); !ok {
		return nil, false
	}
	if len(b.Redacted) > 0 {
		dst = appendKey(dst, ',', "redacted")
		for i, s := range b.Redacted {
			dst = appendJSONString(append(dst, sep(i, '[')), s)
		}
		dst = append(dst, ']')
	}
	if len(b.Resolved) > 0 {
		dst = appendKey(dst, ',', "resolved")
		for i, k := range sortedKeys(b.Resolved) {
			dst = appendJSONString(appendKey(dst, sep(i, '{'), k), b.Resolved[k])
		}
		dst = append(dst, '}')
	}
	dst = appendJSONString(appendKey(dst, ',', "digest"), b.Digest)
	if b.Elicit {
		dst = append(appendKey(dst, ',', "elicit"), "true"...)
	}
	if b.Trace != "" {
		dst = appendJSONString(appendKey(dst, ',', "trace"), b.Trace)
	}
	return append(appendDecision(dst, &b.Decision), '}'), true
}

// appendDecision appends the fields of a Decision, which CallBody embeds.
func appendDecision(dst []byte, d *Decision) []byte {
	dst = appendJSONString(appendKey(dst, ',', "verdict"), d.Verdict)
	dst = appendJSONString(appendKey(dst, ',', "check"), d.Check)
	if d.Rule != "" {
		dst = appendJSONString(appendKey(dst, ',', "rule"), d.Rule)
	}
	dst = appendJSONString(appendKey(dst, ',', "reason"), d.Reason)
	if s := d.TaintedBy; s != nil {
		dst = appendKey(appendKey(dst, ',', "tainted_by"), '{', "seq")
		dst = strconv.AppendInt(dst, int64(s.Seq), 10)
		dst = appendJSONString(appendKey(dst, ',', "server"), s.Server)
		dst = append(appendJSONString(appendKey(dst, ',', "tool"), s.Tool), '}')
	}
	if d.Destination != "" {
		dst = appendJSONString(appendKey(dst, ',', "destination"), d.Destination)
	}
	if d.Grant != "" {
		dst = appendJSONString(appendKey(dst, ',', "grant"), d.Grant)
	}
	return dst
}

func appendResultBody(dst []byte, b *ResultBody) []byte {
	c := byte('{')
	if b.Call != "" {
		dst, c = appendJSONString(appendKey(dst, c, "call"), b.Call), ','
	}
	dst = appendJSONString(appendKey(dst, c, "server"), b.Server)
	dst = appendJSONString(appendKey(dst, ',', "tool"), b.Tool)
	if b.Channel != "" {
		dst = appendJSONString(appendKey(dst, ',', "channel"), b.Channel)
	}
	dst = appendJSONString(appendKey(dst, ',', "status"), b.Status)
	if b.Content != "" {
		dst = appendJSONString(appendKey(dst, ',', "content"), b.Content)
	}
	dst = strconv.AppendInt(appendKey(dst, ',', "size"), b.Size, 10)
	return append(dst, '}')
}

// appendValue appends a value as decoded into an any with UseNumber.
func appendValue(dst []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		return strconv.AppendBool(dst, x), true
	case string:
		return appendJSONString(dst, x), true
	case json.Number:
		s := string(x)
		if s == "" {
			s = "0"
		}
		if !validNumber(s) {
			return nil, false
		}
		return append(dst, s...), true
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), true
		}
		if len(x) == 0 {
			return append(dst, "{}"...), true
		}
		var ok bool
		for i, k := range sortedKeys(x) {
			if dst, ok = appendValue(appendKey(dst, sep(i, '{'), k), x[k]); !ok {
				return nil, false
			}
		}
		return append(dst, '}'), true
	case []any:
		if x == nil {
			return append(dst, "null"...), true
		}
		if len(x) == 0 {
			return append(dst, "[]"...), true
		}
		var ok bool
		for i, e := range x {
			if dst, ok = appendValue(append(dst, sep(i, '[')), e); !ok {
				return nil, false
			}
		}
		return append(dst, ']'), true
	}
	return nil, false
}

func sep(i int, open byte) byte {
	if i == 0 {
		return open
	}
	return ','
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendKey appends c, then key as a string, then ':'.
func appendKey(dst []byte, c byte, key string) []byte {
	return append(appendJSONString(append(dst, c), key), ':')
}

const hexDigits = "0123456789abcdef"

// plain8 says none of the 8 bytes of s needs a look of its own: each is
// ASCII, not a control byte, '"' or '\\'. Read as one word, so that the
// long plain runs of a typical argument or output are passed over eight
// bytes at a time (FuzzAppendJSONString holds the result to the byte
// loop's).
func plain8(s string) bool {
	x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// A byte of zero in a word has its high bit set in (w - ones) &^ w;
	// a byte under 0x20 is one whose top three bits are zero.
	zero := func(w uint64) uint64 { return (w - ones) &^ w & highs }
	return x&highs == 0 &&
		zero(x&(0xe0*ones)) == 0 &&
		zero(x^('"'*ones)) == 0 &&
		zero(x^('\\'*ones)) == 0
}

// appendJSONString is encoding/json's string encoding without HTML escaping,
// as MarshalBody writes it.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plain8(s[i:i+8]) {
			i += 8
			continue
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(dst, s[start:]...), '"')
}

// validNumber is encoding/json's isValidNumber: the literals it writes
// for a json.Number rather than refusing.
func validNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		if s = s[1:]; s == "" {
			return false
		}
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = digits(s[1:])
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		s = digits(s[2:])
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			if s = s[1:]; s == "" {
				return false
			}
		}
		if s[0] < '0' || s[0] > '9' {
			return false
		}
		s = digits(s)
	}
	return s == ""
}

func digits(s string) string {
	for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
		s = s[1:]
	}
	return s
}
