// Package jsontext holds what several packages need of JSON text: refusing
// text that decoding would change, and saying plainly what a decoding
// error means.
package jsontext

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// CheckText refuses JSON text that decoding would silently change:
// bytes that are not UTF-8, and \u escapes of unpaired surrogates. The
// standard decoder turns both into U+FFFD, so the text judged and
// recorded would not be the text sent: a destination or a path that
// matches nothing as sent could match after, or the other way round.
func CheckText(raw []byte) error {
	if !utf8.Valid(raw) {
		off := 0
		for off < len(raw) {
			r, n := utf8.DecodeRune(raw[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return fmt.Errorf("invalid UTF-8 at byte %d", off)
	}
	in := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			in = !in
		case c == '\\' && in:
			if i+1 < len(raw) && raw[i+1] == 'u' {
				hi, ok := escape(raw, i)
				switch {
				case ok && hi >= 0xDC00 && hi <= 0xDFFF:
					return fmt.Errorf("unpaired surrogate \\u%04x at byte %d", hi, i)
				case ok && hi >= 0xD800 && hi <= 0xDBFF:
					lo, ok := escape(raw, i+6)
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return fmt.Errorf("unpaired surrogate \\u%04x at byte %d", hi, i)
					}
					i += 6
				}
			}
			i++ // the escaped character
		}
	}
	return nil
}

// escape reads the \uXXXX escape at raw[i].
func escape(raw []byte, i int) (rune, bool) {
	if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
	return rune(n), err == nil
}

// PlainJSON says what encoding/json's error means without its jargon
// ("json: unknown field", "Go struct field"): an unknown key with known
// (what the object may hold), a value of the wrong kind with its key.
func PlainJSON(err error, known string) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch msg := err.Error(); {
	case strings.HasPrefix(msg, "json: unknown field "):
		return fmt.Errorf("unknown key %s: %s", strings.TrimPrefix(msg, "json: unknown field "), known)
	case errors.As(err, &te) && te.Field != "":
		return fmt.Errorf("%s wants a JSON %s, not a %s", strings.ToLower(te.Field), jsonKind(te.Type.Kind().String()), te.Value)
	case errors.As(err, &te):
		return fmt.Errorf("wants a JSON %s, not a %s", jsonKind(te.Type.Kind().String()), te.Value)
	case errors.As(err, &se):
		return fmt.Errorf("not JSON: %v", se)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("not JSON: it ends in the middle of a value")
	default:
		return errors.New(strings.TrimPrefix(msg, "json: "))
	}
}

func jsonKind(goKind string) string {
	switch {
	case strings.HasPrefix(goKind, "int"), strings.HasPrefix(goKind, "uint"), strings.HasPrefix(goKind, "float"):
		return "number"
	case goKind == "slice", goKind == "array":
		return "array"
	case goKind == "map", goKind == "struct":
		return "object"
	case goKind == "bool":
		return "true or false"
	}
	return goKind
}
