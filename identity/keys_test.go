package identity

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

func writeJWKS(w http.ResponseWriter, keys ...jose.JSONWebKey) {
	_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: keys})
}

// TestRefetchFloodProviderFailing: tokens naming a made-up key id (which
// anyone can send, unsigned by anything) fetch the key set at most once
// a refetch interval while the provider fails, and so do valid tokens
// once the keys are old.
func TestRefetchFloodProviderFailing(t *testing.T) {
	good := newIssuer(t, "k1")
	var fetches atomic.Int64
	var failing atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if failing.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		writeJWKS(w, good.jwk())
	}))
	defer srv.Close()
	cfg := teamConfig
	cfg.JWKSURL = srv.URL + "/jwks"
	v := verifier(t, cfg, "")
	failing.Store(true)
	v.keys.mu.Lock()
	v.keys.fetched, v.keys.tried = time.Now().Add(-11*time.Second), time.Now().Add(-11*time.Second)
	v.keys.mu.Unlock()
	fetches.Store(0)
	attacker := newIssuer(t, "no-such-kid")
	for range 50 {
		if _, err := v.Verify(context.Background(), attacker.token(map[string]any{"sub": "x"})); ReasonOf(err) != UnknownKey {
			t.Fatalf("an unknown key id: %v", err)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("50 unknown-kid tokens while the provider fails: %d fetches, want 1", n)
	}
	v.keys.mu.Lock()
	v.keys.fetched, v.keys.tried = time.Now().Add(-11*time.Minute), time.Now().Add(-11*time.Second)
	v.keys.mu.Unlock()
	fetches.Store(0)
	for range 20 {
		if _, err := v.Verify(context.Background(), good.token(map[string]any{"sub": "ana"})); err != nil {
			t.Fatalf("keys under an hour old serve while the provider fails: %v", err)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("20 valid tokens with old keys and a failing provider: %d fetches, want 1", n)
	}
}

// TestHangingProviderHoldsNobody: while a fetch hangs, a valid token is
// checked against the keys held, without waiting for it.
func TestHangingProviderHoldsNobody(t *testing.T) {
	good := newIssuer(t, "k1")
	var hang atomic.Bool
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() {
			started <- struct{}{}
			<-release
			http.Error(w, "slow", http.StatusGatewayTimeout)
			return
		}
		writeJWKS(w, good.jwk())
	}))
	defer srv.Close()
	defer close(release)
	cfg := teamConfig
	cfg.JWKSURL = srv.URL + "/jwks"
	v := verifier(t, cfg, "")
	hang.Store(true)
	v.keys.mu.Lock()
	v.keys.fetched, v.keys.tried = time.Now().Add(-11*time.Minute), time.Now().Add(-11*time.Second)
	v.keys.mu.Unlock()
	unknown := newIssuer(t, "no-such-kid").token(map[string]any{"sub": "x"})
	go func() { _, _ = v.Verify(context.Background(), unknown) }()
	<-started // the attacker's fetch hangs now
	done := make(chan error, 1)
	go func() {
		_, err := v.Verify(context.Background(), good.token(map[string]any{"sub": "ana"}))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a valid token while a fetch hangs: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a valid token waited for a hanging fetch of the key set")
	}
}
