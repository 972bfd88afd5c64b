package chain

import (
	"crypto/rand"
	"errors"
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
	}{
		{"public for private", ParsePrivateKey, vkey, ErrPublicKey},
		{"private for public", ParsePublicKey, skey, ErrPrivateKey},
		{"text for private", ParsePrivateKey, "version: 1", errNotKey},
		{"text for public", ParsePublicKey, "version: 1", errNotKey},
		{"torn private", ParsePrivateKey, skey[:len(skey)-4], errNotKey},
	} {
		_, err := c.parse(c.in)
		var ke *KeyError
		if !errors.Is(err, c.want) || !errors.As(err, &ke) {
			t.Errorf("%s: err = %v, want a KeyError for %v", c.name, err, c.want)
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
