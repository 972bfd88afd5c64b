package chain

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"
)

func TestKeyKinds(t *testing.T) {
	skey, vkey, err := GenerateKey(rand.Reader, "audit.example/k")
	if err != nil {
		t.Fatal(err)
	}
	if k, err := ParsePrivateKey(skey + "\n"); err != nil || k != skey {
		t.Errorf("ParsePrivateKey(private) = %q, %v", k, err)
	}
	if k, err := ParsePublicKey(" " + vkey + "\n"); err != nil || k != vkey {
		t.Errorf("ParsePublicKey(public) = %q, %v", k, err)
	}
	for _, c := range []struct {
		name  string
		parse func(string) (string, error)
		in    string
		want  error
		text  string // ends the sentence whose subject is the key file
	}{
		{"public for private", ParsePrivateKey, vkey, ErrPublicKey, "is a public key, a private key is needed"},
		{"private for public", ParsePublicKey, skey, ErrPrivateKey, "is a private key, a public key is needed"},
		{"text for private", ParsePrivateKey, "version: 1", errNotKey, "is not a key"},
		{"text for public", ParsePublicKey, "version: 1", errNotKey, "is not a key"},
		{"torn private", ParsePrivateKey, skey[:len(skey)-4], errNotKey, "is not a key"},
	} {
		_, err := c.parse(c.in)
		var ke *KeyError
		if !errors.Is(err, c.want) || !errors.As(err, &ke) {
			t.Errorf("%s: err = %v, want a KeyError for %v", c.name, err, c.want)
		} else if !strings.HasPrefix(err.Error(), c.text) {
			t.Errorf("%s: says %q, want it to start %q", c.name, err, c.text)
		}
	}
}

func TestGenerateKeyRefusesBadNames(t *testing.T) {
	for _, name := range []string{"", "bad name", "a+b", "tab\there", "\xff"} {
		if _, _, err := GenerateKey(rand.Reader, name); !errors.Is(err, errKeyName) {
			t.Errorf("GenerateKey(%q): err = %v, want errKeyName", name, err)
		}
	}
}
