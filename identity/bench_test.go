package identity

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// The cost of checking one token (every HTTP request pays it), against
// go-jose's bare signature check of the same token: bench/identity.sh
// prints the ratios.

func BenchmarkVerifyRS256(b *testing.B) {
	iss := newIssuer(b, "k1")
	v, err := New(context.Background(), teamConfig, Options{PEM: iss.pem()})
	if err != nil {
		b.Fatal(err)
	}
	tok := iss.token(map[string]any{"sub": "ana", "groups": []any{"engineering", "sales"}})
	for b.Loop() {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBaselineJoseRS256(b *testing.B) {
	iss := newIssuer(b, "k1")
	tok := iss.token(map[string]any{"sub": "ana", "groups": []any{"engineering", "sales"}})
	for b.Loop() {
		jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.RS256})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := jws.Verify(&iss.key.PublicKey); err != nil {
			b.Fatal(err)
		}
	}
}

func ecToken(b *testing.B) (*ecdsa.PrivateKey, string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", "ec1"))
	if err != nil {
		b.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(map[string]any{"iss": testIssuer, "aud": testAudience, "sub": "ana", "exp": time.Now().Add(time.Hour).Unix()}).Serialize()
	if err != nil {
		b.Fatal(err)
	}
	return k, tok
}

func BenchmarkVerifyES256(b *testing.B) {
	k, tok := ecToken(b)
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		b.Fatal(err)
	}
	v, err := New(context.Background(), teamConfig, Options{PEM: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBaselineJoseES256(b *testing.B) {
	k, tok := ecToken(b)
	for b.Loop() {
		jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.ES256})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := jws.Verify(&k.PublicKey); err != nil {
			b.Fatal(err)
		}
	}
}
