// Package identity verifies the signed token that says whom an agent acts
// for, and maps the token's groups onto the policy's scopes. bailiff
// authenticates nobody itself: an OpenID provider does, and this package
// checks its signature, issuer, audience and validity period (go-oidc and
// go-jose), every time, with no way to turn any of them off.
package identity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"bailiff/engine"
)

// Config is the identity section of a gateway configuration, or run's
// identity flags.
type Config struct {
	// Issuer is the provider's issuer URL, exactly as tokens name it.
	Issuer string `yaml:"issuer"`
	// Audience is this gateway's resource identifier (its URL as clients
	// reach it): a token not issued for it is refused.
	Audience string `yaml:"audience"`
	// JWKSURL and JWKSFile name the provider's keys; with neither (and no
	// PEM in BAILIFF_JWT_KEY), they come from the issuer's discovery
	// document.
	JWKSURL  string `yaml:"jwks_url"`
	JWKSFile string `yaml:"jwks_file"`
	// Algorithms are the signature algorithms accepted (default: every
	// asymmetric one go-jose knows). none and the HMAC ones cannot be
	// named: a public key must never serve as a shared secret.
	Algorithms []string `yaml:"algorithms"`
	// ClockSkew is how far the gateway's clock and the issuer's may
	// disagree when expiry and not-before are checked (default one
	// minute, at most five).
	ClockSkew time.Duration `yaml:"clock_skew"`
	// GroupsClaim names the claim holding the groups (default "groups").
	GroupsClaim string `yaml:"groups_claim"`
	// Groups maps a group onto the scopes it grants; BaseScopes are held
	// by everyone with a valid token. A group not mapped grants nothing.
	Groups     map[string][]string `yaml:"groups"`
	BaseScopes []string            `yaml:"base_scopes"`
	// TenantClaim names the claim holding the principal's tenant, whose
	// ceiling its calls spend. Unset, every principal is the one local
	// tenant's; set, a token without it is refused.
	TenantClaim string `yaml:"tenant_claim"`
}

const (
	defaultSkew = time.Minute
	// maxSkew is go-oidc's own not-before leeway: a wider skew would be
	// refused there first.
	maxSkew = 5 * time.Minute
)

// Identity is what a verified token establishes.
type Identity struct {
	// Principal carries the token's subject, issuer and key id, the
	// groups it presented and the scopes they map onto; never the token.
	Principal engine.Principal
	// Unmapped are the presented groups the configuration does not map.
	Unmapped []string
	Expiry   time.Time
	// Until is when the token stops being accepted: its expiry, and the
	// skew allowed on it.
	Until time.Time
	// UnverifiedEmail is an email claim the provider did not mark
	// verified: shown, never recorded as the principal's address.
	UnverifiedEmail string
}

// Verifier checks tokens against one configuration.
type Verifier struct {
	cfg  Config
	keys *keyring
	v    *oidc.IDTokenVerifier
	now  func() time.Time
}

// asymmetric are the algorithms that may be configured.
var asymmetric = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// Options are what a Verifier needs besides its configuration.
type Options struct {
	// PEM holds public keys (BAILIFF_JWT_KEY), or is empty.
	PEM string
	// Now is the clock tokens' validity is checked against (default
	// time.Now).
	Now func() time.Time
}

// New checks cfg and finds its keys; keys at a URL are fetched now, so a
// provider that cannot be reached stops startup rather than every call.
func New(ctx context.Context, cfg Config, opt Options) (*Verifier, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	algs, err := algorithms(cfg.Algorithms)
	if err != nil {
		return nil, err
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	if cfg.ClockSkew == 0 {
		cfg.ClockSkew = defaultSkew
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	keys, err := keySet(ctx, cfg, opt.PEM, algs)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(algs))
	for i, a := range algs {
		names[i] = string(a)
	}
	// Expiry is checked below, with the configured skew: go-oidc's
	// allows none. Every other check is go-oidc's.
	v := oidc.NewVerifier(cfg.Issuer, keys, &oidc.Config{
		ClientID: cfg.Audience, SupportedSigningAlgs: names, Now: opt.Now, SkipExpiryCheck: true})
	return &Verifier{cfg: cfg, keys: keys, v: v, now: opt.Now}, nil
}

// Check refuses settings that would let any token, or any group, pass
// for another.
func (c Config) Check() error {
	switch {
	case c.Issuer == "":
		return errors.New("identity: issuer is required: tokens from any issuer would do")
	case c.Audience == "":
		return errors.New("identity: audience is required: a token issued for another service would do")
	case c.JWKSURL != "" && c.JWKSFile != "":
		return errors.New("identity: jwks_url and jwks_file both set: name one source of keys")
	case c.ClockSkew < 0 || c.ClockSkew > maxSkew:
		return fmt.Errorf("identity: clock_skew %v: must be between 0 and %v", c.ClockSkew, maxSkew)
	case strings.TrimSpace(c.GroupsClaim) != c.GroupsClaim:
		return fmt.Errorf("identity: groups_claim %q has spaces around it", c.GroupsClaim)
	case strings.TrimSpace(c.TenantClaim) != c.TenantClaim:
		return fmt.Errorf("identity: tenant_claim %q has spaces around it", c.TenantClaim)
	}
	for g, scopes := range c.Groups {
		if g == "" {
			return errors.New("identity: groups: a group name is empty")
		}
		if slices.Contains(scopes, "") {
			return fmt.Errorf("identity: groups: %s maps onto an empty scope", g)
		}
	}
	if slices.Contains(c.BaseScopes, "") {
		return errors.New("identity: base_scopes holds an empty scope")
	}
	return nil
}

func algorithms(names []string) ([]jose.SignatureAlgorithm, error) {
	if len(names) == 0 {
		return asymmetric, nil
	}
	var out []jose.SignatureAlgorithm
	for _, n := range names {
		a := jose.SignatureAlgorithm(n)
		if !slices.Contains(asymmetric, a) {
			return nil, fmt.Errorf("identity: algorithm %q cannot be configured: only signatures by a key pair are accepted (%s)", n, algList())
		}
		out = append(out, a)
	}
	return out, nil
}

func algList() string {
	var s []string
	for _, a := range asymmetric {
		s = append(s, string(a))
	}
	return strings.Join(s, ", ")
}

// Verify checks one token and maps its groups. Every refusal is a
// *Refusal.
func (v *Verifier) Verify(ctx context.Context, token string) (*Identity, error) {
	if token == "" {
		return nil, refuse(NoToken, "no token")
	}
	t, err := v.v.Verify(ctx, token)
	if err != nil {
		return nil, v.explain(ctx, token, err)
	}
	if err := v.checkExpiry(t); err != nil {
		return nil, err
	}
	// The claims go-oidc does not read, read once: the typed ones and,
	// for the groups claim (whose name is configured), all of them.
	var claims tokenClaims
	var all map[string]any
	if err := t.Claims(&claims); err != nil {
		return nil, refuse(Malformed, "claims: %v", err)
	}
	if err := t.Claims(&all); err != nil {
		return nil, refuse(Malformed, "claims: %v", err)
	}
	if nbf := claims.NotBefore; nbf != nil && nbf.Time().After(v.now().Add(v.cfg.ClockSkew)) {
		return nil, refuse(NotYetValid, "the token is not valid before %s", nbf.Time().UTC().Format(time.RFC3339))
	}
	if t.Subject == "" {
		return nil, refuse(Malformed, "the token names no subject")
	}
	if hasControl(t.Subject) || strings.TrimSpace(t.Subject) == "" {
		return nil, refuse(Malformed, "the subject %q is blank or holds control characters", t.Subject)
	}
	groups, err := v.groups(all)
	if err != nil {
		return nil, err
	}
	id := &Identity{Expiry: t.Expiry, Until: t.Expiry.Add(v.cfg.ClockSkew), Principal: engine.Principal{
		Authenticated: engine.AuthOIDC, Subject: t.Subject, Issuer: t.Issuer,
		KeyID: keyID(token), Groups: groups, GroupsClaim: v.cfg.GroupsClaim}}
	if claims.Email != "" {
		// Only an address the provider verified is the principal's: an
		// address anyone may type into a profile would be trusted as a
		// destination.
		if claims.emailVerified() && engine.CheckPrincipalEmail(claims.Email) == nil {
			id.Principal.Email = claims.Email
		} else {
			id.UnverifiedEmail = claims.Email
		}
	}
	id.Principal.Scopes, id.Unmapped = Scopes(v.cfg, groups)
	if id.Principal.Tenant, err = v.tenant(all); err != nil {
		return nil, err
	}
	return id, nil
}

// tenant reads the tenant claim, when one is configured: a token that
// names none, or not as a plain name, is refused, since its calls would
// otherwise spend another tenant's ceiling, or none.
func (v *Verifier) tenant(claims map[string]any) (string, error) {
	if v.cfg.TenantClaim == "" {
		return "", nil
	}
	raw := claimAt(claims, v.cfg.TenantClaim)
	if raw == nil {
		return "", refuse(Malformed, "the token names no tenant (claim %q)", v.cfg.TenantClaim)
	}
	t, ok := raw.(string)
	if !ok || strings.TrimSpace(t) == "" || engine.CheckTenant(t) != nil {
		return "", refuse(Malformed, "claim %q holds %q, not a tenant name", v.cfg.TenantClaim, fmt.Sprint(raw))
	}
	return t, nil
}

// tokenClaims are the claims read besides go-oidc's own.
type tokenClaims struct {
	NotBefore     *jwt.NumericDate `json:"nbf"`
	Email         string           `json:"email"`
	EmailVerified any              `json:"email_verified"`
}

// emailVerified reads email_verified as providers write it: true, or
// (AWS Cognito) the string "true". Anything else is not verified.
func (c tokenClaims) emailVerified() bool {
	return c.EmailVerified == true || c.EmailVerified == "true"
}

// checkExpiry refuses a token past its expiry, give or take the
// configured skew (not-before is checked with the other claims). A token
// without an expiry never expires, so it is refused.
func (v *Verifier) checkExpiry(t *oidc.IDToken) error {
	if t.Expiry.IsZero() {
		return refuse(Malformed, "the token has no expiry (exp)")
	}
	if v.now().After(t.Expiry.Add(v.cfg.ClockSkew)) {
		return refuse(Expired, "the token expired at %s", t.Expiry.UTC().Format(time.RFC3339))
	}
	return nil
}

// Scopes are what cfg grants to someone presenting groups: the base
// scopes and every mapped group's, sorted and without repeats; and the
// groups that grant nothing. Shadow calls it with a candidate mapping.
func Scopes(cfg Config, groups []string) (scopes, unmapped []string) {
	scopes = slices.Clone(cfg.BaseScopes)
	for _, g := range groups {
		mapped, ok := cfg.Groups[g]
		if !ok {
			unmapped = append(unmapped, g)
			continue
		}
		scopes = append(scopes, mapped...)
	}
	slices.Sort(scopes)
	return slices.Compact(scopes), unmapped
}

// groups reads the groups claim: absent is none; anything but a list of
// strings refuses the token, since a group read wrongly could grant.
func (v *Verifier) groups(claims map[string]any) ([]string, error) {
	raw := claimAt(claims, v.cfg.GroupsClaim)
	if raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, refuse(Malformed, "claim %q is not a list of group names", v.cfg.GroupsClaim)
	}
	var groups []string
	for _, g := range list {
		s, ok := g.(string)
		if !ok || s == "" || hasControl(s) {
			return nil, refuse(Malformed, "claim %q holds %q, not a group name", v.cfg.GroupsClaim, fmt.Sprint(g))
		}
		if !slices.Contains(groups, s) {
			groups = append(groups, s)
		}
	}
	return groups, nil
}

// claimAt is the claim named name: a top-level claim of that name, or
// else, for a dotted name, the value at that path through objects
// (Keycloak's realm_access.roles). A namespaced claim whose name holds
// dots (https://corp.example/groups) is found whole first.
func claimAt(claims map[string]any, name string) any {
	if v, ok := claims[name]; ok {
		return v
	}
	var cur any = claims
	for _, part := range strings.Split(name, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

// hasControl tells whether s holds a control character: a name holding
// one could rewrite the terminal or the page that shows it.
func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}
