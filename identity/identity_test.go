package identity

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

const (
	testIssuer   = "https://id.example.com"
	testAudience = "https://bailiff.example.com/mcp"
)

// issuer signs real tokens with a key made for the test.
type issuer struct {
	t   testing.TB
	key *rsa.PrivateKey
	kid string
}

func newIssuer(t testing.TB, kid string) *issuer {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &issuer{t: t, key: k, kid: kid}
}

func (i *issuer) pem() string {
	der, err := x509.MarshalPKIXPublicKey(&i.key.PublicKey)
	if err != nil {
		i.t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// claims are a token's claims, the registered ones filled in unless the
// test overrides them.
func (i *issuer) token(claims map[string]any) string {
	c := map[string]any{"iss": testIssuer, "aud": testAudience, "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: i.key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", i.kid))
	if err != nil {
		i.t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		i.t.Fatal(err)
	}
	return tok
}

var teamConfig = Config{
	Issuer: testIssuer, Audience: testAudience,
	Groups: map[string][]string{
		"engineering": {"fs.read", "fs.write"},
		"sales":       {"mail.send"},
		"admins":      {"fs.read", "fs.write", "mail.send"},
	},
	BaseScopes: []string{"read"},
}

func verifier(t *testing.T, cfg Config, pemKey string) *Verifier {
	t.Helper()
	v, err := New(context.Background(), cfg, Options{PEM: pemKey})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPeople: three people in different groups, one configuration.
func TestPeople(t *testing.T) {
	iss := newIssuer(t, "k1")
	v := verifier(t, teamConfig, iss.pem())
	for _, c := range []struct {
		sub      string
		groups   []any
		scopes   []string
		unmapped []string
	}{
		{"ana", []any{"engineering"}, []string{"fs.read", "fs.write", "read"}, nil},
		{"ben", []any{"sales", "contractors"}, []string{"mail.send", "read"}, []string{"contractors"}},
		{"cho", []any{"admins", "engineering"}, []string{"fs.read", "fs.write", "mail.send", "read"}, nil},
	} {
		id, err := v.Verify(context.Background(), iss.token(map[string]any{"sub": c.sub, "groups": c.groups}))
		if err != nil {
			t.Fatalf("%s: %v", c.sub, err)
		}
		p := id.Principal
		if p.Subject != c.sub || p.Issuer != testIssuer || p.KeyID != "k1" {
			t.Errorf("%s: principal %+v", c.sub, p)
		}
		if !slices.Equal(p.Scopes, c.scopes) || !slices.Equal(id.Unmapped, c.unmapped) || len(p.Groups) != len(c.groups) {
			t.Errorf("%s: scopes %v unmapped %v groups %v", c.sub, p.Scopes, id.Unmapped, p.Groups)
		}
	}
}

// TestUnmappedGroupGrantsNothing: a group the configuration does not map
// gives only the base scopes, even named like a scope.
func TestUnmappedGroupGrantsNothing(t *testing.T) {
	iss := newIssuer(t, "k1")
	v := verifier(t, teamConfig, iss.pem())
	id, err := v.Verify(context.Background(), iss.token(map[string]any{"sub": "dee", "groups": []any{"mail.send", "Engineering"}}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(id.Principal.Scopes, []string{"read"}) || !slices.Equal(id.Unmapped, []string{"mail.send", "Engineering"}) {
		t.Errorf("scopes %v unmapped %v", id.Principal.Scopes, id.Unmapped)
	}
}

// TestRefused: every token that must not establish anyone.
func TestRefused(t *testing.T) {
	iss := newIssuer(t, "k1")
	other := newIssuer(t, "k1") // same kid, another key
	v := verifier(t, teamConfig, iss.pem())
	ok := map[string]any{"sub": "ana", "groups": []any{"engineering"}}
	with := func(k string, val any) map[string]any {
		c := map[string]any{"sub": "ana", "groups": []any{"engineering"}}
		c[k] = val
		return c
	}
	body := base64.RawURLEncoding.EncodeToString(mustJSON(t, map[string]any{"iss": testIssuer, "aud": testAudience, "sub": "ana", "exp": time.Now().Add(time.Hour).Unix()}))
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + body + "."
	// The classic confusion: the public key, as published, used as an
	// HMAC secret.
	hs, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte(iss.pem())}, nil)
	if err != nil {
		t.Fatal(err)
	}
	confused, err := jwt.Signed(hs).Claims(map[string]any{"iss": testIssuer, "aud": testAudience, "sub": "ana", "exp": time.Now().Add(time.Hour).Unix()}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	good := iss.token(ok)
	parts := strings.Split(good, ".")
	forged := parts[0] + "." + base64.RawURLEncoding.EncodeToString(mustJSON(t, with("groups", []any{"admins"}))) + "." + parts[2]
	for name, c := range map[string]struct {
		tok  string
		want Reason
	}{
		"expired":         {iss.token(with("exp", time.Now().Add(-2*time.Minute).Unix())), Expired},
		"no expiry":       {iss.token(with("exp", nil)), Malformed},
		"wrong audience":  {iss.token(with("aud", "https://other.example.com")), WrongAudience},
		"no audience":     {iss.token(with("aud", nil)), WrongAudience},
		"wrong issuer":    {iss.token(with("iss", "https://id.example.com.evil")), WrongIssuer},
		"wrong key":       {other.token(ok), BadSignature},
		"alg none":        {none, Unsigned},
		"hmac public key": {confused, SharedSecret},
		"forged claims":   {forged, BadSignature},
		"no subject":      {iss.token(map[string]any{"groups": []any{"admins"}}), Malformed},
		"blank subject":   {iss.token(map[string]any{"sub": " "}), Malformed},
		"groups string":   {iss.token(with("groups", "admins")), Malformed},
		"groups number":   {iss.token(with("groups", []any{"admins", 7})), Malformed},
		"not yet valid":   {iss.token(with("nbf", time.Now().Add(2*time.Minute).Unix())), NotYetValid},
		"empty":           {"", NoToken},
		"garbage":         {"a.b.c", Malformed},
		"two parts":       {"a.b", Malformed},
	} {
		id, err := v.Verify(context.Background(), c.tok)
		t.Logf("%s: %v", name, err)
		if got := ReasonOf(err); got != c.want {
			t.Errorf("%s: got %+v, %v (%q); want %q", name, id, err, got, c.want)
		}
	}
}

// TestClockSkew: a token just expired, or valid in a moment, passes within
// the configured skew and is refused past it.
func TestClockSkew(t *testing.T) {
	iss := newIssuer(t, "k1")
	now := time.Now()
	cfg := teamConfig
	cfg.ClockSkew = 30 * time.Second
	v, err := New(context.Background(), cfg, Options{PEM: iss.pem(), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		claims map[string]any
		want   Reason
	}{
		{map[string]any{"sub": "a", "exp": now.Add(-20 * time.Second).Unix()}, ""},
		{map[string]any{"sub": "a", "exp": now.Add(-40 * time.Second).Unix()}, Expired},
		{map[string]any{"sub": "a", "nbf": now.Add(20 * time.Second).Unix()}, ""},
		{map[string]any{"sub": "a", "nbf": now.Add(40 * time.Second).Unix()}, NotYetValid},
	} {
		_, err := v.Verify(context.Background(), iss.token(c.claims))
		if got := ReasonOf(err); got != c.want || (c.want == "") != (err == nil) {
			t.Errorf("%v: %v, want %q", c.claims, err, c.want)
		}
	}
}

// TestEmail: only an address the provider verified becomes the
// principal's.
func TestEmail(t *testing.T) {
	iss := newIssuer(t, "k1")
	v := verifier(t, teamConfig, iss.pem())
	for _, c := range []struct {
		claims          map[string]any
		email, shownNot string
	}{
		{map[string]any{"sub": "a", "email": "ana@corp.example", "email_verified": true}, "ana@corp.example", ""},
		{map[string]any{"sub": "a", "email": "ana@corp.example"}, "", "ana@corp.example"},
		{map[string]any{"sub": "a", "email": "ana@corp.example", "email_verified": "true"}, "ana@corp.example", ""},
		{map[string]any{"sub": "a", "email": "ana@corp.example", "email_verified": "yes"}, "", "ana@corp.example"},
		{map[string]any{"sub": "a", "email": "ana@corp.example", "email_verified": 1}, "", "ana@corp.example"},
		{map[string]any{"sub": "a", "email": "Ana <ana@corp.example>", "email_verified": true}, "", "Ana <ana@corp.example>"},
	} {
		id, err := v.Verify(context.Background(), iss.token(c.claims))
		if err != nil {
			t.Fatalf("%v: %v", c.claims, err)
		}
		if id.Principal.Email != c.email || id.UnverifiedEmail != c.shownNot {
			t.Errorf("%v: email %q unverified %q", c.claims, id.Principal.Email, id.UnverifiedEmail)
		}
	}
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConfigRefused: what cannot be configured.
func TestConfigRefused(t *testing.T) {
	iss := newIssuer(t, "k1")
	for name, c := range map[string]struct {
		cfg Config
		pem string
	}{
		"no issuer":    {Config{Audience: testAudience}, iss.pem()},
		"no audience":  {Config{Issuer: testIssuer}, iss.pem()},
		"alg none":     {Config{Issuer: testIssuer, Audience: testAudience, Algorithms: []string{"none"}}, iss.pem()},
		"alg HS256":    {Config{Issuer: testIssuer, Audience: testAudience, Algorithms: []string{"RS256", "HS256"}}, iss.pem()},
		"two sources":  {Config{Issuer: testIssuer, Audience: testAudience, JWKSFile: "keys.json"}, iss.pem()},
		"private pem":  {Config{Issuer: testIssuer, Audience: testAudience}, privatePEM(t, iss)},
		"not a pem":    {Config{Issuer: testIssuer, Audience: testAudience}, "hello"},
		"plain http":   {Config{Issuer: testIssuer, Audience: testAudience, JWKSURL: "http://keys.example.com/jwks"}, ""},
		"empty scope":  {Config{Issuer: testIssuer, Audience: testAudience, BaseScopes: []string{""}}, iss.pem()},
		"missing file": {Config{Issuer: testIssuer, Audience: testAudience, JWKSFile: filepath.Join(t.TempDir(), "none.json")}, ""},
	} {
		if _, err := New(context.Background(), c.cfg, Options{PEM: c.pem}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func privatePEM(t *testing.T, i *issuer) string {
	der, err := x509.MarshalPKCS8PrivateKey(i.key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// TestJWKSFile: keys from a file; a symmetric key in it is refused.
func TestJWKSFile(t *testing.T) {
	iss := newIssuer(t, "k1")
	dir := t.TempDir()
	pub := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &iss.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}}
	file := filepath.Join(dir, "jwks.json")
	writeJSON(t, file, pub)
	cfg := teamConfig
	cfg.JWKSFile = file
	v := verifier(t, cfg, "")
	if _, err := v.Verify(context.Background(), iss.token(map[string]any{"sub": "ana"})); err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string]jose.JSONWebKey{
		"symmetric": {Key: []byte("secret"), KeyID: "s"},
		"private":   {Key: iss.key, KeyID: "p"},
	} {
		writeJSON(t, file, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k}})
		if _, err := New(context.Background(), cfg, Options{}); err == nil {
			t.Errorf("%s key in the JWKS file accepted", name)
		}
	}
}

func writeJSON(t *testing.T, name string, v any) {
	if err := os.WriteFile(name, mustJSON(t, v), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDiscovery: the keys come from the issuer's own discovery document
// and JWKS, served by a real HTTP server; an ECDSA key signs.
func TestDiscovery(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL, "jwks_uri": srv.URL + "/jwks",
			"authorization_endpoint": srv.URL + "/auth", "id_token_signing_alg_values_supported": []string{"ES256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &ec.PublicKey, KeyID: "ec1", Algorithm: "ES256", Use: "sig"}}})
	})
	cfg := Config{Issuer: srv.URL, Audience: testAudience, Groups: map[string][]string{"ops": {"deploy"}}}
	v := verifier(t, cfg, "")
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: ec}, (&jose.SignerOptions{}).WithHeader("kid", "ec1"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(map[string]any{"iss": srv.URL, "aud": testAudience, "sub": "eve", "groups": []string{"ops"}, "exp": time.Now().Add(time.Hour).Unix()}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	id, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if id.Principal.KeyID != "ec1" || !slices.Equal(id.Principal.Scopes, []string{"deploy"}) {
		t.Errorf("principal %+v", id.Principal)
	}
	// A token of the right issuer signed by a key the JWKS does not hold.
	if _, err := v.Verify(context.Background(), newIssuer(t, "ec1").token(map[string]any{"iss": srv.URL, "sub": "eve"})); ReasonOf(err) != BadSignature {
		t.Errorf("a token signed by another key under a known id: %v, want %s", err, BadSignature)
	}
	if _, err := v.Verify(context.Background(), newIssuer(t, "rotated").token(map[string]any{"iss": srv.URL, "sub": "eve"})); ReasonOf(err) != UnknownKey {
		t.Errorf("a token signed by a key not in the issuer's JWKS: %v, want %s", err, UnknownKey)
	}
}

// jwksServer serves a key set on loopback that the test can change.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetches int
}

func newJWKSServer(t *testing.T, keys ...jose.JSONWebKey) *jwksServer {
	s := &jwksServer{keys: keys}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.fetches++
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: s.keys})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(keys ...jose.JSONWebKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = keys
}

func (i *issuer) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: &i.key.PublicKey, KeyID: i.kid, Algorithm: "RS256", Use: "sig"}
}

// TestKeyRotation: a key rotated into the issuer's set is taken up at the
// next token naming it; one rotated out stops verifying once the set is
// fetched again; and unknown key ids cannot make the gateway fetch the
// set more often than allowed.
func TestKeyRotation(t *testing.T) {
	old, next := newIssuer(t, "2026-11"), newIssuer(t, "2026-12")
	srv := newJWKSServer(t, old.jwk())
	cfg := teamConfig
	cfg.JWKSURL = srv.URL + "/jwks"
	v := verifier(t, cfg, "")
	if _, err := v.Verify(context.Background(), old.token(map[string]any{"sub": "ana"})); err != nil {
		t.Fatal(err)
	}
	// Within the refetch interval, a new key id is unknown, and asking
	// again and again fetches nothing.
	srv.set(old.jwk(), next.jwk())
	for range 20 {
		if _, err := v.Verify(context.Background(), next.token(map[string]any{"sub": "ana"})); ReasonOf(err) != UnknownKey {
			t.Fatalf("a key not yet fetched: %v, want %s", err, UnknownKey)
		}
	}
	srv.mu.Lock()
	fetches := srv.fetches
	srv.mu.Unlock()
	if fetches != 1 {
		t.Errorf("%d fetches of the key set, want 1", fetches)
	}
	v.keys.refetch = 0
	if _, err := v.Verify(context.Background(), next.token(map[string]any{"sub": "ana"})); err != nil {
		t.Fatalf("a key rotated in: %v", err)
	}
	srv.set(next.jwk())
	v.keys.maxAge = 0
	if _, err := v.Verify(context.Background(), old.token(map[string]any{"sub": "ana"})); ReasonOf(err) != UnknownKey {
		t.Errorf("a key rotated out: %v, want %s", err, UnknownKey)
	}
}

// TestIssuerUnreachable: keys that cannot be fetched stop startup.
func TestIssuerUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	for name, cfg := range map[string]Config{
		"jwks_url":  {Issuer: testIssuer, Audience: testAudience, JWKSURL: srv.URL + "/jwks"},
		"discovery": {Issuer: srv.URL, Audience: testAudience},
	} {
		if _, err := New(context.Background(), cfg, Options{}); err == nil {
			t.Errorf("%s: a provider that cannot be reached was accepted", name)
		}
	}
}

// TestGroupsClaimPath: the groups claim is found by its whole name, or by
// a dotted path through objects; anything else there refuses the token.
func TestGroupsClaimPath(t *testing.T) {
	iss := newIssuer(t, "k1")
	for _, c := range []struct {
		claim  string
		claims map[string]any
		scopes []string
		refuse bool
	}{
		{"realm_access.roles", map[string]any{"realm_access": map[string]any{"roles": []any{"sales"}}}, []string{"mail.send", "read"}, false},
		{"https://corp.example/groups", map[string]any{"https://corp.example/groups": []any{"sales"}}, []string{"mail.send", "read"}, false},
		{"realm_access.roles", map[string]any{"realm_access": []any{"sales"}}, []string{"read"}, false},
		{"realm_access.roles", map[string]any{"realm_access": map[string]any{"roles": "sales"}}, nil, true},
		{"realm_access.roles", map[string]any{"realm_access.roles": []any{"admins"}, "realm_access": map[string]any{"roles": []any{"sales"}}}, []string{"fs.read", "fs.write", "mail.send", "read"}, false},
	} {
		cfg := teamConfig
		cfg.GroupsClaim = c.claim
		v := verifier(t, cfg, iss.pem())
		claims := map[string]any{"sub": "ana"}
		for k, x := range c.claims {
			claims[k] = x
		}
		id, err := v.Verify(context.Background(), iss.token(claims))
		if c.refuse != (err != nil) || (err == nil && !slices.Equal(id.Principal.Scopes, c.scopes)) {
			t.Errorf("%s in %v: %v %+v, want scopes %v (refused %v)", c.claim, c.claims, err, id, c.scopes, c.refuse)
		}
	}
}

// TestProviderDown: keys past their age are kept while the provider does
// not answer, it is asked at most once a refetch interval, and once the
// keys are stale past bound every token is refused.
func TestProviderDown(t *testing.T) {
	iss := newIssuer(t, "k1")
	srv := newJWKSServer(t, iss.jwk())
	cfg := teamConfig
	cfg.JWKSURL = srv.URL + "/jwks"
	v := verifier(t, cfg, "")
	srv.Close()
	v.keys.maxAge = 0
	for range 5 {
		if _, err := v.Verify(context.Background(), iss.token(map[string]any{"sub": "ana"})); err != nil {
			t.Fatalf("keys of a provider briefly down: %v", err)
		}
	}
	v.keys.mu.Lock()
	v.keys.fetched = time.Now().Add(-2 * staleKeys)
	v.keys.tried = time.Time{}
	v.keys.mu.Unlock()
	if _, err := v.Verify(context.Background(), iss.token(map[string]any{"sub": "ana"})); ReasonOf(err) != UnknownKey {
		t.Errorf("keys stale past bound: %v, want refused", err)
	}
}

// TestTenantClaim: with tenant_claim set, the principal's tenant is that
// claim, by name or dotted path; a token without it, or with anything but
// a plain name there, is refused, since its calls would spend another
// tenant's ceiling or none. Unset, the tenant is left to the local one.
func TestTenantClaim(t *testing.T) {
	iss := newIssuer(t, "k1")
	for _, c := range []struct {
		claim  string
		claims map[string]any
		tenant string
		refuse bool
	}{
		{"", map[string]any{"org": "acme"}, "", false},
		{"org", map[string]any{"org": "acme"}, "acme", false},
		{"https://corp.example/tenant", map[string]any{"https://corp.example/tenant": "globex"}, "globex", false},
		{"org.id", map[string]any{"org": map[string]any{"id": "initech"}}, "initech", false},
		{"org", map[string]any{}, "", true},
		{"org", map[string]any{"org": ""}, "", true},
		{"org", map[string]any{"org": "  "}, "", true},
		{"org", map[string]any{"org": "ac\x00me"}, "", true},
		{"org", map[string]any{"org": []any{"acme"}}, "", true},
		{"org", map[string]any{"org": 7}, "", true},
		{"org", map[string]any{"org": "*"}, "", true},
	} {
		cfg := teamConfig
		cfg.TenantClaim = c.claim
		v := verifier(t, cfg, iss.pem())
		claims := map[string]any{"sub": "ana"}
		for k, x := range c.claims {
			claims[k] = x
		}
		id, err := v.Verify(context.Background(), iss.token(claims))
		if c.refuse != (err != nil) || (err == nil && id.Principal.Tenant != c.tenant) {
			t.Errorf("%s in %v: %v %+v, want tenant %q (refused %v)", c.claim, c.claims, err, id, c.tenant, c.refuse)
		}
	}
	cfg := teamConfig
	cfg.TenantClaim = " org"
	if err := cfg.Check(); err == nil {
		t.Error("a tenant claim with spaces around it was accepted")
	}
}
