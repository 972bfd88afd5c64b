package jsontext

import "testing"

func TestCheckText(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{
		{`{"to":"bob@corp.example"}`, ""},
		{`{"to":"caf\u00e9 \ud83d\ude00 \\ud800"}`, ""},
		{"{\"to\":\"a\xffb\"}", "invalid UTF-8 at byte 8"},
		{"{\"to\":\"\xc3\"}", "invalid UTF-8 at byte 7"},
		{`{"to":"a\ud800b"}`, `unpaired surrogate \ud800 at byte 8`},
		{`{"to":"a\udc00"}`, `unpaired surrogate \udc00 at byte 8`},
		{`{"to":"\ud800\u0041"}`, `unpaired surrogate \ud800 at byte 7`},
		{`{"a\ud800":1}`, `unpaired surrogate \ud800 at byte 3`},
	} {
		got := ""
		if err := CheckText([]byte(c.in)); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("CheckText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
