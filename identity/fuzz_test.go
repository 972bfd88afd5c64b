package identity

import (
	"context"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// FuzzVerify: no token, however broken, panics the verifier or passes
// without being the one the issuer signed; every refusal has a reason.
func FuzzVerify(f *testing.F) {
	iss := newIssuer(f, "k1")
	good := iss.token(map[string]any{"sub": "ana", "groups": []any{"engineering", "x"}})
	parts := strings.Split(good, ".")
	for _, s := range []string{good, "", "a.b.c", "..", parts[0] + "." + parts[1] + ".", parts[0] + ".e30." + parts[2],
		"eyJhbGciOiJub25lIn0.e30.", "eyJhbGciOiJIUzI1NiJ9.e30.AAAA", good + "=", strings.ToUpper(good)} {
		f.Add(s)
	}
	v, err := New(context.Background(), teamConfig, Options{PEM: iss.pem()})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		id, err := v.Verify(context.Background(), tok)
		if err != nil {
			if ReasonOf(err) == "" {
				t.Fatalf("refused without a reason: %v", err)
			}
			return
		}
		if tok != good || id.Principal.Subject != "ana" {
			t.Fatalf("accepted %q as %+v", tok, id.Principal)
		}
	})
}

// FuzzKeys: key files are read or refused, never a panic, and never yield
// a key that is not a public asymmetric one.
func FuzzKeys(f *testing.F) {
	iss := newIssuer(f, "k1")
	f.Add([]byte(iss.pem()))
	f.Add(mustJSON(f, map[string]any{"keys": []any{iss.jwk()}}))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`))
	f.Add([]byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func([]byte) ([]jose.JSONWebKey, error){parsePEM, parseJWKS} {
			keys, err := parse(data)
			if err != nil {
				continue
			}
			for _, k := range keys {
				if !asymmetricKey(k.Key) {
					t.Fatalf("a %T key read", k.Key)
				}
			}
		}
	})
}
