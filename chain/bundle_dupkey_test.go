package chain

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"
)

// TestParseBundleRefusesDuplicateKeys: a bundle naming two seqs (Go keeps
// the last, another verifier may keep the first) is refused by name. Its
// other values are strings and lists of strings, and unknown keys are
// refused, so a repeat can only sit at the top level.
func TestParseBundleRefusesDuplicateKeys(t *testing.T) {
	tree, recs, err := ReadTree(bytes.NewReader(sample(t, 3)))
	if err != nil {
		t.Fatal(err)
	}
	skey, _, _ := GenerateKey(rand.Reader, "audit.example/log")
	root, _ := tree.Root(3)
	cp := Checkpoint{Origin: "audit.example/log", Size: 3, Root: root}
	signed, err := SignCheckpoint(cp, skey)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tree.NewBundle(recs[1], signed, cp)
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := marshalBody(b)
	if _, err := ParseBundle(enc); err != nil {
		t.Fatalf("setup: %v", err)
	}
	twice := strings.Replace(string(enc), `"seq":1`, `"seq":2,"seq":1`, 1)
	if twice == string(enc) {
		t.Fatalf("setup: no seq in %s", enc)
	}
	_, err = ParseBundle([]byte(twice))
	if err == nil || !strings.HasPrefix(err.Error(), `proof bundle: duplicate key "seq" at byte `) {
		t.Fatalf("ParseBundle: %v, want a duplicate seq refused", err)
	}
}
