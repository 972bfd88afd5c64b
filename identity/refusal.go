package identity

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Reason names why a token was refused; HTTP answers carry it, and tests
// tell refusals apart by it.
type Reason string

// The reasons a token is refused.
const (
	NoToken       Reason = "no_token"
	Malformed     Reason = "malformed"
	Unsigned      Reason = "alg_none"
	SharedSecret  Reason = "alg_hmac"
	AlgRefused    Reason = "alg_not_allowed"
	UnknownKey    Reason = "unknown_key"
	BadSignature  Reason = "bad_signature"
	WrongIssuer   Reason = "wrong_issuer"
	WrongAudience Reason = "wrong_audience"
	Expired       Reason = "expired"
	NotYetValid   Reason = "not_yet_valid"
)

// Refusal is a token refused, and why.
type Refusal struct {
	Reason Reason
	Detail string
}

func (r *Refusal) Error() string { return "token refused (" + string(r.Reason) + "): " + r.Detail }

func refuse(r Reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// ReasonOf is err's reason, or "" if err is no refusal.
func ReasonOf(err error) Reason {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}

// explain turns go-oidc's refusal into a reason. go-oidc decided; this
// only reads the token again to say which check failed, in the order
// go-oidc checks (the signature first, then issuer and audience). What it
// cannot place keeps go-oidc's words, under Malformed.
func (v *Verifier) explain(ctx context.Context, token string, oidcErr error) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return refuse(Malformed, "not a signed JWT (%d dot-separated parts, want 3)", len(parts))
	}
	var head struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(raw, &head) != nil {
		return refuse(Malformed, "the header is not base64url JSON")
	}
	alg := jose.SignatureAlgorithm(head.Alg)
	switch {
	case strings.EqualFold(head.Alg, "none"):
		return refuse(Unsigned, "alg %q: an unsigned token proves nothing", head.Alg)
	case slices.Contains([]jose.SignatureAlgorithm{jose.HS256, jose.HS384, jose.HS512}, alg):
		return refuse(SharedSecret, "alg %s: a shared-secret signature is never accepted (the issuer's public key is no secret)", head.Alg)
	case !slices.Contains(v.keys.algs, alg):
		return refuse(AlgRefused, "alg %q is not among those configured (%s)", head.Alg, joinAlgs(v.keys.algs))
	}
	if _, err := v.keys.VerifySignature(ctx, token); err != nil {
		var r *Refusal
		if errors.As(err, &r) {
			return r
		}
		return refuse(BadSignature, "%v", err)
	}
	var c jwt.Claims
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(payload, &c) != nil {
		return refuse(Malformed, "the claims are not base64url JSON")
	}
	switch {
	case c.Issuer != v.cfg.Issuer:
		return refuse(WrongIssuer, "issued by %q, not %q", c.Issuer, v.cfg.Issuer)
	case !slices.Contains(c.Audience, v.cfg.Audience):
		return refuse(WrongAudience, "issued for %q, not this gateway (%q): a token for another service is never accepted here", strings.Join(c.Audience, ", "), v.cfg.Audience)
	}
	return refuse(Malformed, "%v", oidcErr)
}

func joinAlgs(algs []jose.SignatureAlgorithm) string {
	s := make([]string, len(algs))
	for i, a := range algs {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

// keyID is the signing key's id named in a verified token's header, kept
// only to be recorded.
func keyID(token string) string {
	head, _, _ := strings.Cut(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		Kid string `json:"kid"`
	}
	if json.Unmarshal(raw, &h) != nil {
		return ""
	}
	return h.Kid
}
