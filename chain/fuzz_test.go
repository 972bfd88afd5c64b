package chain

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzParse: no input panics; every accepted line encodes back to the
// same bytes, and Header agrees with Parse.
func FuzzParse(f *testing.F) {
	for _, l := range lines(sample(f, 10)) {
		f.Add(l)
	}
	f.Add([]byte(`{"v":1,"seq":0,"ts":"2026-11-03T09:00:00.000000000Z","session":"","kind":"end","prev":"0000000000000000000000000000000000000000000000000000000000000000","hash":"0000000000000000000000000000000000000000000000000000000000000000"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := Parse(line)
		if err != nil {
			return
		}
		if !bytes.Equal(r.Line(), line) {
			t.Fatalf("accepted line does not re-encode to itself:\n%s\n%s", line, r.Line())
		}
		seq, prev, stated, actual, err := readHeader(line)
		if err != nil || seq != r.Seq || prev != r.Prev || stated != r.Hash || actual != r.Hash {
			t.Fatalf("Header disagrees with Parse: %v", err)
		}
		var body map[string]any
		if err := DecodeBody(r.Body, &body); err == nil {
			again, _ := marshalBody(body)
			if !bytes.Equal(again, r.Body) {
				t.Fatal("DecodeBody accepted a body it does not re-encode")
			}
		}
	})
}

// FuzzVerify: no input panics; the fast integrity check and the full
// reader agree on where a log stops being valid (the reader, which also
// parses bodies' frames, may stop earlier, never later).
func FuzzVerify(f *testing.F) {
	data := sample(f, 6)
	f.Add(data)
	f.Add(data[:len(data)-7])
	f.Add(bytes.Replace(data, []byte(`"seq":2`), []byte(`"seq":3`), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		sum, ierr := VerifyIntegrity(bytes.NewReader(data))
		rd := NewReader(bytes.NewReader(data))
		var err error
		for err == nil {
			_, err = rd.Next()
		}
		if rd.Count() > sum.Records {
			t.Fatalf("reader read %d records, integrity only %d", rd.Count(), sum.Records)
		}
		if ierr == nil && err == io.EOF && rd.Root() != sum.Root {
			t.Fatal("reader and integrity check disagree on the root")
		}
		var ve *VerifyError
		if ierr != nil && !errors.As(ierr, &ve) && !errors.Is(ierr, ErrNotALog) {
			t.Fatalf("integrity error is neither a *VerifyError nor ErrNotALog: %v", ierr)
		}
		if errors.Is(ierr, ErrNotALog) != errors.Is(err, ErrNotALog) {
			t.Fatalf("reader and integrity check disagree on whether it is a log: %v, %v", err, ierr)
		}
	})
}

// FuzzParseCheckpoint: no input panics; every accepted checkpoint's text
// is the input.
func FuzzParseCheckpoint(f *testing.F) {
	f.Add([]byte("audit.example/log\n7\nK3+5MZ0ahx6NrsqrvTQnsVtGBg0tVXEzn6bL6FQnUIg=\n"))
	f.Add([]byte("o\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		c, err := ParseCheckpoint(text)
		if err != nil {
			return
		}
		if c.Text() != string(text) {
			t.Fatalf("accepted %q, which encodes as %q", text, c.Text())
		}
	})
}

// FuzzParseBundle: no input panics, and no bundle verifies against a
// key that signed nothing in it.
func FuzzParseBundle(f *testing.F) {
	f.Add([]byte(`{"format":"bailiff-inclusion-proof/v1","seq":0,"record":"","proof":[],"checkpoint":""}`))
	_, vkey, err := GenerateKey(rand.Reader, "audit.example/log")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBundle(data)
		if err != nil {
			return
		}
		if _, _, err := VerifyBundle(b, vkey); err == nil {
			t.Fatal("a fuzzed bundle verified")
		}
	})
}

// FuzzParseDigest: the table-driven digest reader accepts exactly
// "sha256:" and 64 lower-case hex digits, reads them as hex does, and
// DigestOf writes back the same text.
func FuzzParseDigest(f *testing.F) {
	f.Add(Digest([]byte("x")))
	f.Add("sha256:" + strings.Repeat("A", 64))
	f.Add("sha256:" + strings.Repeat("0", 63) + "g")
	f.Add("sha256:" + strings.Repeat("f", 65))
	f.Fuzz(func(t *testing.T, d string) {
		key, ok := ParseDigest(d)
		h, prefixed := strings.CutPrefix(d, "sha256:")
		want, err := hex.DecodeString(h)
		wantOK := prefixed && len(h) == 64 && err == nil && strings.ToLower(h) == h
		if ok != wantOK {
			t.Fatalf("ParseDigest(%q) ok = %v, want %v", d, ok, wantOK)
		}
		if !ok {
			if key != [32]byte{} {
				t.Fatalf("ParseDigest(%q) refused it but filled the key", d)
			}
			return
		}
		if !bytes.Equal(key[:], want) || DigestOf(key) != d {
			t.Fatalf("ParseDigest(%q) = %x, DigestOf gives %s", d, key, DigestOf(key))
		}
	})
}

// FuzzRepair: no input panics; a log repair accepts comes out as a log
// that verifies clean, and is the input cut after a whole record (with a
// newline added when the last record lacked only that), never rewritten.
func FuzzRepair(f *testing.F) {
	data := sample(f, 4)
	f.Add(data)
	f.Add(data[:len(data)-1])
	f.Add(append(data[:len(data)-1:len(data)-1], 'X'))
	f.Add(append(data[:len(data)-1:len(data)-1], '}', 0, 0))
	f.Add(data[:len(data)-40])
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		done, err := Repair(bytes.NewReader(data), &out)
		if err != nil {
			return
		}
		got := out.Bytes()
		if _, err := VerifyIntegrity(bytes.NewReader(got)); err != nil && len(got) > 0 {
			t.Fatalf("repaired log does not verify: %v", err)
		}
		want := data
		if done.Newline {
			want = append(data[:len(data):len(data)], '\n')
		}
		if !bytes.HasPrefix(want, got) || int64(len(got))+done.Cut != int64(len(want)) && done.Cut > 0 {
			t.Fatalf("repair gave %d bytes and cut %d of %d: not the input cut after a record", len(got), done.Cut, len(data))
		}
	})
}
