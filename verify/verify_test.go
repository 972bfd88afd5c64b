package verify

import (
	"bytes"
	"io"
	"os"
	"testing"

	"bailiff/audit"
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
			var b audit.CallBody
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

// TestVerifyApproverKeys: with the approver keys given to verify, a log
// whose sessions trust another key (as a rewritten log could, to sign its
// own grants) fails, and its grants approve nothing.
func TestVerifyApproverKeys(t *testing.T) {
	lee, err := os.ReadFile("../fixtures/chain/src/lee.pub")
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := chain.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{1}, 32)), "lee")
	if err != nil {
		t.Fatal(err)
	}
	verify := func(keys ...string) *Report {
		f, err := os.Open("../fixtures/chain/good_mail.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rep, err := Log("good_mail", f, chain.OpenEvidence("../fixtures/chain/good_mail.jsonl.evidence"), Options{ApproverKeys: keys})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := verify(string(bytes.TrimSpace(lee))); len(rep.Findings) != 0 {
		t.Errorf("the right key: %+v", rep.Findings)
	}
	rep := verify(other)
	grants := 0
	for _, f := range rep.Findings {
		if f.Kind == FindGrant {
			grants++
		}
	}
	if grants < 3 || grants != len(rep.Findings) {
		t.Errorf("another key: %d grant findings of %d: %+v", grants, len(rep.Findings), rep.Findings)
	}
}
