package chain

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestNotALog(t *testing.T) {
	log := sample(t, 3)
	edited := bytes.Replace(log, []byte(`"seq":0,`), []byte(`"seq":0 ,`), 1)
	cases := []struct {
		name, in, looks string
	}{
		{"trace", `{"start":{"session":"s1"}}` + "\n" + `{"end":{}}` + "\n", "is JSON but not a bailiff audit log"},
		{"policy", "version: 1\nrules: []\n", "is not a bailiff audit log"},
		{"binary", "\x7fELF\x02\x01\x01\x00\x00\x00", "is binary data, not a bailiff audit log"},
		{"json", `{"seq":0}` + "\n", "is JSON but not a bailiff audit log"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			check := func(what string, err error) {
				t.Helper()
				var nl *NotALogError
				if !errors.As(err, &nl) || !errors.Is(err, ErrNotALog) || nl.Looks != c.looks {
					t.Errorf("%s: got %v, want %q", what, err, c.looks)
				}
			}
			_, err := NewReader(bytes.NewReader([]byte(c.in))).Next()
			check("Reader", err)
			_, err = VerifyIntegrity(bytes.NewReader([]byte(c.in)))
			check("VerifyIntegrity", err)
			var out bytes.Buffer
			_, err = Repair(bytes.NewReader([]byte(c.in)), &out)
			check("Repair", err)
			if out.Len() != 0 {
				t.Errorf("Repair wrote %d bytes of what is not a log", out.Len())
			}
		})
	}
	// A first line that is a record and then breaks is an edit, not the
	// wrong file.
	_, err := VerifyIntegrity(bytes.NewReader(edited))
	var ve *VerifyError
	if !errors.As(err, &ve) || errors.Is(err, ErrNotALog) {
		t.Errorf("edited first record: got %v, want a *VerifyError", err)
	}
	// So is one whose first line lost its prefix, when a record follows.
	nl := bytes.IndexByte(log, '\n')
	noPrefix := append([]byte(`{"v":2,`), log[len(`{"v":1,`):]...)
	for what, in := range map[string][]byte{"first line without the prefix": noPrefix, "first line replaced": append([]byte("garbage\n"), log[nl+1:]...)} {
		_, err := VerifyIntegrity(bytes.NewReader(in))
		if !errors.As(err, &ve) || errors.Is(err, ErrNotALog) {
			t.Errorf("%s: got %v, want a *VerifyError", what, err)
		}
	}
	// An empty input is no error to the reader: callers that need a proof
	// refuse it (verify.Log says ErrEmptyLog).
	if _, err := NewReader(bytes.NewReader(nil)).Next(); err != io.EOF {
		t.Errorf("empty: got %v, want io.EOF", err)
	}
}
