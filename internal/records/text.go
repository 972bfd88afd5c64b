package records

import (
	"fmt"
	"strconv"
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
