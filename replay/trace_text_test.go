package replay

import (
	"errors"
	"strings"
	"testing"
)

// TestTraceRefusesInvalidText: a trace line whose bytes are not UTF-8, or
// that escapes a lone surrogate, is refused with its line, not read with
// U+FFFD in place of what was written.
func TestTraceRefusesInvalidText(t *testing.T) {
	start := `{"start":{"session":"s1","server":"mail","principal":{"subject":"ana"},"tools":["send_email"]}}` + "\n"
	for _, c := range []struct{ line, want string }{
		{"{\"call\":{\"id\":\"c1\",\"tool\":\"send_email\",\"args\":{\"to\":\"eve@evil.ex\xffample\"}}}", "t.jsonl:2: not valid text: invalid UTF-8 at byte 64"},
		{`{"output":{"text":"hi \udc00"}}`, `t.jsonl:2: not valid text: unpaired surrogate \udc00 at byte 22`},
	} {
		_, err := ParseTrace("t.jsonl", strings.NewReader(start+c.line+"\n"))
		var se *SyntaxError
		if !errors.As(err, &se) || err.Error() != c.want {
			t.Errorf("got %v, want %s", err, c.want)
		}
	}
}

// TestEmptyTrace: a trace with no events is ErrEmpty, not an empty list.
func TestEmptyTrace(t *testing.T) {
	for _, in := range []string{"", "\n  \n"} {
		if _, err := ParseTrace("t.jsonl", strings.NewReader(in)); !errors.Is(err, ErrEmpty) {
			t.Errorf("ParseTrace(%q) = %v, want ErrEmpty", in, err)
		}
	}
}
