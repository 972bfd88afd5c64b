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

// TestEmptyTrace: a trace with no events is ErrEmptyTrace, not an empty list.
func TestEmptyTrace(t *testing.T) {
	for _, in := range []string{"", "\n  \n"} {
		if _, err := ParseTrace("t.jsonl", strings.NewReader(in)); !errors.Is(err, ErrEmptyTrace) {
			t.Errorf("ParseTrace(%q) = %v, want ErrEmptyTrace", in, err)
		}
	}
}

// TestTracePrincipalEmail: start.principal.email is read, written back,
// and refused, with its line, when it is not one plain address.
func TestTracePrincipalEmail(t *testing.T) {
	good := `{"start":{"session":"s1","server":"mail","principal":{"subject":"ana","email":"ana@corp.example"},"tools":["send_email"]}}` + "\n"
	evs, err := ParseTrace("t.jsonl", strings.NewReader(good))
	if err != nil || evs[0].Start.Principal.Email != "ana@corp.example" {
		t.Fatalf("got %v, %+v", err, evs)
	}
	if b := FormatEvent(evs[0]); !strings.Contains(string(b), `"email":"ana@corp.example"`) {
		t.Errorf("written back without the address: %s", b)
	}
	for _, bad := range []string{`"ana@corp.example, eve@evil.example"`, `"Ana <ana@corp.example>"`, `7`, `""`} {
		in := strings.Replace(good, `"ana@corp.example"`, bad, 1)
		if _, err := ParseTrace("t.jsonl", strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "t.jsonl:1:") || !strings.Contains(err.Error(), "email") {
			t.Errorf("email %s: got %v", bad, err)
		}
	}
}
