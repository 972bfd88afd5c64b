package replay

import (
	"bytes"
	"io"
	"os"
	"testing"

	"bailiff/chain"
	"bailiff/engine"
)

// TestArgsDigestFromBytes: the digest verify takes from a call body's
// bytes is the engine's digest of the decoded arguments, for every call
// of the fixture logs.
func TestArgsDigestFromBytes(t *testing.T) {
	n := 0
	for _, name := range []string{"../fixtures/chain/good_mail.jsonl", "../fixtures/chain/good_web.jsonl"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rd := chain.NewReader(bytes.NewReader(data))
		for {
			rec, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.Kind != chain.KindCall {
				continue
			}
			var b chain.CallBody
			if err := chain.DecodeBody(rec.Body, &b); err != nil {
				t.Fatal(err)
			}
			if got, want := argsDigest(rec.Body, b.Args), engine.ArgsDigest(b.Args); got != want {
				t.Errorf("%s seq %d: %s from bytes, %s from values", name, rec.Seq, got, want)
			}
			n++
		}
	}
	if n < 10 {
		t.Fatalf("only %d calls checked", n)
	}
}
