package identity

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
)

// keyring is the one source of keys a configuration names, as go-oidc's
// KeySet. It is ours, not go-oidc's RemoteKeySet, for two reasons: a
// token signed by a key the set does not hold is told apart from one
// whose signature is bad, and a remote set is fetched at startup (a
// provider that cannot be reached stops the gateway, not every call) and
// refetched at most once in refetchEvery however many unknown key ids are
// presented. The signatures themselves are go-jose's.
type keyring struct {
	algs []jose.SignatureAlgorithm
	url  string // "" for keys given once
	// refetch and maxAge are refetchEvery and keysMaxAge (tests shorten
	// them).
	refetch, maxAge time.Duration

	mu       sync.Mutex
	keys     []jose.JSONWebKey
	fetched  time.Time // when keys were fetched
	tried    time.Time // when a fetch was last started, whatever came of it
	failed   error     // why the last fetch failed, if it did
	fetching bool      // a fetch is under way: nobody waits for it but its caller
}

const (
	// refetchEvery bounds how often an unknown key id, or age, fetches
	// the set again: a key rotated in is picked up within it.
	refetchEvery = 10 * time.Second
	// keysMaxAge is how long fetched keys serve before they are fetched
	// again; staleKeys how long they still serve while the provider
	// cannot be reached. Past it, every token is refused.
	keysMaxAge = 10 * time.Minute
	staleKeys  = time.Hour
	maxJWKS    = 1 << 20
)

var _ oidc.KeySet = (*keyring)(nil)

// keySet is the one source of keys cfg and pemKeys name: a PEM, a JWKS
// file, a JWKS URL, or the issuer's discovery document. Two named at
// once is refused: which one would count is a guess.
func keySet(ctx context.Context, cfg Config, pemKeys string, algs []jose.SignatureAlgorithm) (*keyring, error) {
	if pemKeys != "" && (cfg.JWKSURL != "" || cfg.JWKSFile != "") {
		return nil, errors.New("identity: BAILIFF_JWT_KEY is set and the config names jwks_url or jwks_file: name one source of keys")
	}
	k := &keyring{algs: algs, refetch: refetchEvery, maxAge: keysMaxAge}
	var err error
	switch {
	case pemKeys != "":
		if k.keys, err = parsePEM([]byte(pemKeys)); err != nil {
			return nil, fmt.Errorf("identity: BAILIFF_JWT_KEY: %v", err)
		}
		return k, nil
	case cfg.JWKSFile != "":
		data, err := os.ReadFile(cfg.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("identity: jwks_file: %v", err)
		}
		if k.keys, err = parseJWKS(data); err != nil {
			return nil, fmt.Errorf("identity: jwks_file %s: %v", cfg.JWKSFile, err)
		}
		return k, nil
	case cfg.JWKSURL != "":
		k.url = cfg.JWKSURL
	default:
		if k.url, err = discover(ctx, cfg.Issuer); err != nil {
			return nil, err
		}
	}
	if err := fetchable(k.url); err != nil {
		return nil, fmt.Errorf("identity: jwks_url: %v", err)
	}
	keys, err := k.download(ctx)
	if err != nil {
		return nil, fmt.Errorf("identity: the issuer's keys: %v", err)
	}
	k.keys, k.fetched, k.tried = keys, time.Now(), time.Now()
	return k, nil
}

// discover reads the issuer's OpenID discovery document (go-oidc checks
// that it names the same issuer) for its jwks_uri.
func discover(ctx context.Context, issuer string) (string, error) {
	if err := fetchable(issuer); err != nil {
		return "", fmt.Errorf("identity: issuer (whose discovery document names the keys): %v", err)
	}
	ctx = oidc.ClientContext(ctx, httpClient())
	p, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		return "", fmt.Errorf("identity: discovering the issuer's keys: %v", err)
	}
	var doc struct {
		JWKS string `json:"jwks_uri"`
	}
	if err := p.Claims(&doc); err != nil || doc.JWKS == "" {
		return "", errors.New("identity: the issuer's discovery document names no jwks_uri")
	}
	return doc.JWKS, nil
}

// httpClient fetches keys: bounded in time, and never redirected to where
// fetchable would not go.
func httpClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		return fetchable(r.URL.String())
	}}
}

// download reads the set at k.url. It holds no lock: the keys held go on
// serving while it waits.
func (k *keyring) download(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", k.url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxJWKS {
		return nil, fmt.Errorf("%s: a key set over %d bytes", k.url, maxJWKS)
	}
	keys, err := parseJWKS(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", k.url, err)
	}
	return keys, nil
}

// candidates are the keys that may have signed with kid: those named
// kid, and those named nothing (as go-oidc matches).
func (k *keyring) candidates(kid string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, key := range k.keys {
		if kid == "" || key.KeyID == "" || key.KeyID == kid {
			out = append(out, key)
		}
	}
	return out
}

// current are the keys for kid, fetched again if they are old or kid is
// unknown: at most one fetch a refetchEvery, whether it succeeds, fails
// or hangs, and only the request that started it waits for it. A token
// naming a made-up key id costs one fetch in ten seconds, and holds up
// nobody else's.
func (k *keyring) current(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	if k.url == "" {
		defer k.mu.Unlock()
		return k.candidates(kid), nil
	}
	start := (time.Since(k.fetched) > k.maxAge || len(k.candidates(kid)) == 0) && time.Since(k.tried) > k.refetch && !k.fetching
	if start {
		k.fetching, k.tried = true, time.Now()
	}
	k.mu.Unlock()
	if start {
		// The caller going away does not cut the fetch others need.
		keys, err := k.download(context.WithoutCancel(ctx))
		k.mu.Lock()
		k.fetching, k.failed = false, err
		if err == nil {
			k.keys, k.fetched = keys, time.Now()
		}
		k.mu.Unlock()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if age := time.Since(k.fetched); age > staleKeys {
		return nil, refuse(UnknownKey, "the issuer's keys could not be fetched for %s (%v): no key is trusted that long", age.Round(time.Minute), k.failed)
	}
	return k.candidates(kid), nil
}

// VerifySignature is go-oidc's KeySet: the payload, if a key of the set
// signed token with an algorithm configured.
func (k *keyring) VerifySignature(ctx context.Context, token string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(token, k.algs)
	if err != nil {
		return nil, refuse(Malformed, "%v", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, refuse(Malformed, "%d signatures, want 1", len(jws.Signatures))
	}
	kid := jws.Signatures[0].Header.KeyID
	keys, err := k.current(ctx, kid)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, refuse(UnknownKey, "key id %q is not in the issuer's key set", kid)
	}
	alg := jws.Signatures[0].Header.Algorithm
	for _, key := range keys {
		if key.Algorithm != "" && key.Algorithm != alg {
			continue // the set says which algorithm the key is for
		}
		if payload, err := jws.Verify(key.Key); err == nil {
			return payload, nil
		}
	}
	if kid == "" {
		return nil, refuse(BadSignature, "no key in the issuer's key set verifies the signature")
	}
	return nil, refuse(BadSignature, "the signature does not verify with key %q", kid)
}

// fetchable refuses keys fetched in the clear from another machine: whoever
// sits on the path would choose them.
func fetchable(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not a URL", raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
		return fmt.Errorf("%q is plain http to another machine: keys must come over https", raw)
	}
	return fmt.Errorf("%q is not an https URL", raw)
}

// parsePEM reads public keys and certificates. A private key is refused:
// the gateway checks signatures and must never be able to make them.
func parsePEM(data []byte) ([]jose.JSONWebKey, error) {
	var keys []jose.JSONWebKey
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		var k any
		var err error
		switch b.Type {
		case "PUBLIC KEY":
			k, err = x509.ParsePKIXPublicKey(b.Bytes)
		case "CERTIFICATE":
			var c *x509.Certificate
			if c, err = x509.ParseCertificate(b.Bytes); err == nil {
				k = c.PublicKey
			}
		default:
			return nil, fmt.Errorf("a %q block: only PUBLIC KEY and CERTIFICATE are read (never a private key)", b.Type)
		}
		if err != nil {
			return nil, err
		}
		if !asymmetricKey(k) {
			return nil, fmt.Errorf("a %T key: only RSA, ECDSA and Ed25519 keys are read", k)
		}
		keys = append(keys, jose.JSONWebKey{Key: k})
	}
	if len(keys) == 0 {
		return nil, errors.New("no PEM public key in it")
	}
	return keys, nil
}

// parseJWKS reads a JSON Web Key Set's public keys; a symmetric or
// private key in it is refused, as in a PEM, and so is a key for
// encryption only.
func parseJWKS(data []byte) ([]jose.JSONWebKey, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, err
	}
	var keys []jose.JSONWebKey
	for _, k := range set.Keys {
		if !k.IsPublic() || !asymmetricKey(k.Key) {
			return nil, fmt.Errorf("key %q is not a public RSA, ECDSA or Ed25519 key", k.KeyID)
		}
		if k.Use == "enc" {
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no signing keys in it")
	}
	return keys, nil
}

func asymmetricKey(k any) bool {
	switch k.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
		return true
	}
	return false
}
