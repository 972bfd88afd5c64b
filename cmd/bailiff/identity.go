package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"bailiff/engine"
	"bailiff/identity"
)

// identityParams are the flags that configure identity for run and
// whoami: an identity file (the gateway config's identity: section on
// its own), or the same settings one flag each; never both.
type identityParams struct {
	file       string
	issuer     string
	audience   string
	jwksFile   string
	jwksURL    string
	algs       []string
	skew       time.Duration
	claim      string
	groups     []string // GROUP=SCOPE[,SCOPE...]
	baseScopes []string
	tokenFile  string
}

func (ip *identityParams) register(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&ip.file, "identity", "", "YAML file of identity settings (the keys of a gateway config's identity: section), instead of the --id-* flags")
	f.StringVar(&ip.issuer, "id-issuer", "", "the OpenID provider's issuer URL: with it, the principal comes from a verified token, never from --principal")
	f.StringVar(&ip.audience, "id-audience", "", "this gateway's resource URL, which tokens must name as their audience")
	f.StringVar(&ip.jwksFile, "id-jwks-file", "", "a JSON Web Key Set file holding the issuer's public keys (default: the issuer's discovery document, or a PEM in $BAILIFF_JWT_KEY)")
	f.StringVar(&ip.jwksURL, "id-jwks-url", "", "the issuer's JSON Web Key Set URL (https, or http on loopback)")
	f.StringSliceVar(&ip.algs, "id-algorithms", nil, "signature algorithms accepted (default every RSA, ECDSA and EdDSA one; none and HMAC cannot be named)")
	f.DurationVar(&ip.skew, "id-clock-skew", 0, "how far clocks may disagree on expiry and not-before (default 1m, at most 5m)")
	f.StringVar(&ip.claim, "id-groups-claim", "", "the claim holding the principal's groups (default groups)")
	f.StringArrayVar(&ip.groups, "id-group", nil, "GROUP=SCOPE[,SCOPE...]: the scopes a group grants (repeatable); a group not named grants nothing")
	f.StringSliceVar(&ip.baseScopes, "id-base-scopes", nil, "scopes every verified principal holds")
	f.StringVar(&ip.tokenFile, "id-token-file", "", "file holding the token that says whom the agent acts for (default $BAILIFF_ID_TOKEN)")
}

// config is the identity configured, if any.
func (ip *identityParams) config(stdin io.Reader) (identity.Config, bool, error) {
	flags := ip.issuer != "" || ip.audience != "" || ip.jwksFile != "" || ip.jwksURL != "" || len(ip.algs) > 0 ||
		ip.skew != 0 || ip.claim != "" || len(ip.groups) > 0 || len(ip.baseScopes) > 0
	if ip.file != "" {
		if flags {
			return identity.Config{}, false, usageErr(errors.New("--identity and --id-* settings both given: name identity in one place"), "")
		}
		cfg, err := loadIdentityFile(stdin, ip.file)
		return cfg, err == nil, err
	}
	if !flags {
		return identity.Config{}, false, nil
	}
	cfg := identity.Config{Issuer: ip.issuer, Audience: ip.audience, JWKSFile: ip.jwksFile, JWKSURL: ip.jwksURL,
		Algorithms: ip.algs, ClockSkew: ip.skew, GroupsClaim: ip.claim, BaseScopes: ip.baseScopes}
	for _, g := range ip.groups {
		name, scopes, ok := strings.Cut(g, "=")
		if !ok || name == "" || scopes == "" {
			return cfg, false, usageErr(fmt.Errorf("--id-group %q is not GROUP=SCOPE[,SCOPE...]", g), "--id-group engineering=fs.read,fs.write")
		}
		if cfg.Groups == nil {
			cfg.Groups = map[string][]string{}
		}
		if _, dup := cfg.Groups[name]; dup {
			return cfg, false, usageErr(fmt.Errorf("--id-group %s given twice: which mapping counts is a guess", name), "")
		}
		cfg.Groups[name] = strings.Split(scopes, ",")
	}
	return cfg, true, nil
}

// loadIdentityFile reads an identity file; its jwks_file is relative to
// it, as a gateway config's paths are.
func loadIdentityFile(stdin io.Reader, name string) (identity.Config, error) {
	data, err := readInput(stdin, name, kindIdentity)
	if err != nil {
		return identity.Config{}, err
	}
	return parseIdentity(name, data)
}

func parseIdentity(name string, data []byte) (identity.Config, error) {
	var cfg identity.Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return cfg, usageErr(engine.YAMLError(name, data, err), "")
	}
	cfg.JWKSFile = relTo(name, cfg.JWKSFile)
	return cfg, nil
}

func relTo(config, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(config), p)
}

// newVerifier finds cfg's keys: a PEM in BAILIFF_JWT_KEY, else the file or
// URL cfg names, else the issuer's discovery document.
func newVerifier(ctx context.Context, cfg identity.Config) (*identity.Verifier, error) {
	pemKeys := os.Getenv("BAILIFF_JWT_KEY")
	if pemKeys != "" && !strings.Contains(pemKeys, "-----BEGIN") {
		return nil, usageErr(errors.New("BAILIFF_JWT_KEY holds no PEM text: it holds the key itself, not a file's name"), `BAILIFF_JWT_KEY="$(cat issuer.pem)", or name a key set with jwks_file`)
	}
	v, err := identity.New(ctx, cfg, identity.Options{PEM: pemKeys})
	if err != nil {
		hint := "docs/identity.md says what an identity section holds"
		if cfg.JWKSURL == "" && cfg.JWKSFile == "" && pemKeys == "" {
			hint = "without jwks_file, jwks_url or BAILIFF_JWT_KEY, the keys come from the issuer's discovery document: name them another way if it cannot be reached"
		}
		return nil, usageErr(err, hint)
	}
	return v, nil
}

// stdioToken is the token a stdio session presents: --id-token-file, or
// $BAILIFF_ID_TOKEN; both at once is refused, as is neither.
func stdioToken(file string) (string, error) {
	env := strings.TrimSpace(os.Getenv("BAILIFF_ID_TOKEN"))
	switch {
	case file != "" && env != "":
		return "", usageErr(errors.New("--id-token-file and $BAILIFF_ID_TOKEN both set: which token counts is a guess"), "")
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return "", usageErr(fmt.Errorf("--id-token-file: %v", unwrapPath(err)), "")
		}
		return strings.TrimSpace(string(data)), nil
	case env == "":
		return "", usageErr(errors.New("identity is configured and no token was given: with identity, nobody acts without one"),
			"put the token in $BAILIFF_ID_TOKEN or a file named by --id-token-file")
	}
	return env, nil
}

// runPrincipal is who the agent acts for, and until when: with identity
// configured, whom the token names (until it expires); without, the
// name given or the local user. The principal is checked against the
// approver keys: a principal must never approve their own agent's calls.
func runPrincipal(ctx context.Context, stdin io.Reader, stderr io.Writer, p runParams, approvers []string) (engine.Principal, time.Time, error) {
	cfg, ok, err := p.id.config(stdin)
	if err != nil {
		return engine.Principal{}, time.Time{}, err
	}
	if !ok {
		if p.id.tokenFile != "" {
			return engine.Principal{}, time.Time{}, usageErr(errors.New("--id-token-file without identity settings: nothing would check the token"), "add --identity FILE, or --id-issuer and --id-audience")
		}
		if err := engine.CheckTenant(p.tenant); err != nil {
			return engine.Principal{}, time.Time{}, usageErr(fmt.Errorf("--tenant: %v", err), "")
		}
		principal := localPrincipal(engine.Principal{Subject: p.principal, Scopes: p.scopes, Tenant: p.tenant})
		if principal.Subject == "" {
			principal.Subject = os.Getenv("USER")
		}
		if principal.Subject == "" {
			return principal, time.Time{}, noPrincipal()
		}
		return principal, time.Time{}, checkApprovers(stderr, approvers, principal.Subject)
	}
	if p.principal != "" || len(p.scopes) > 0 || p.tenant != "" {
		return engine.Principal{}, time.Time{}, usageErr(errors.New("--principal, --scopes or --tenant (or $BAILIFF_PRINCIPAL) given with identity configured: the token alone says who acts, its groups which scopes they hold, and tenant_claim its tenant"), "")
	}
	principal, expiry, err := verifiedPrincipal(ctx, stderr, cfg, p.id.tokenFile)
	if err != nil {
		return principal, expiry, err
	}
	return principal, expiry, checkApprovers(stderr, approvers, principal.Subject)
}

// verifiedPrincipal is whom the stdio session's token names, and when it
// stops being valid. A refused token stops startup: there is no fallback
// principal once identity is configured.
func verifiedPrincipal(ctx context.Context, stderr io.Writer, cfg identity.Config, tokenFile string) (engine.Principal, time.Time, error) {
	tok, err := stdioToken(tokenFile)
	if err != nil {
		return engine.Principal{}, time.Time{}, err
	}
	v, err := newVerifier(ctx, cfg)
	if err != nil {
		return engine.Principal{}, time.Time{}, err
	}
	id, err := v.Verify(ctx, tok)
	if err != nil {
		return engine.Principal{}, time.Time{}, findingErr(err, "bailiff whoami checks a token as the gateway does, and says why it is refused")
	}
	if len(id.Unmapped) > 0 {
		fmt.Fprintf(stderr, "bailiff: groups that grant nothing here: %s\n", shownList(id.Unmapped))
	}
	return id.Principal, id.Expiry, nil
}

// actingFor says whom a session acts for, and how that was established.
func actingFor(p engine.Principal) string {
	if p.Authenticated == engine.AuthOIDC {
		return fmt.Sprintf("%s (token from %s; scopes %s)", shown(p.Subject), shown(p.Issuer), shownList(p.Scopes))
	}
	if p.Tenant != "" {
		return fmt.Sprintf("%s of tenant %s (no token checked)", shown(p.Subject), shown(p.Tenant))
	}
	return fmt.Sprintf("%s (no token checked)", shown(p.Subject))
}

// warnUncovered says at start when the policy's tenant budgets refuse
// every call of the principal's tenant: a policy that looks right and
// serves nothing.
func warnUncovered(stderr io.Writer, pol *engine.Policy, p engine.Principal) {
	if t := pol.Uncovered(p.Tenant); t != "" {
		fmt.Fprintf(stderr, "bailiff: warning: the policy's tenants give tenant %q no ceiling: every call will be refused by check tenant-budget (name it under tenants:, or give \"*\" a ceiling)\n", t)
	}
}

// localPrincipal is the principal without identity: a name bailiff was
// given or the local user, recorded as checked by no token.
func localPrincipal(p engine.Principal) engine.Principal {
	p.Authenticated = engine.AuthNone
	return p
}

// checkConfigPrincipal refuses a gateway config's principal that is not
// one plain name, or that claims what only a token may say.
func checkConfigPrincipal(name string, c *gatewayConfig) error {
	if err := engine.CheckPrincipalEmail(c.Principal.Email); err != nil {
		return usageErr(fmt.Errorf("%s: %v", name, err), "")
	}
	if err := noAssertedIdentity(name+": principal", c.Principal); err != nil {
		return usageErr(err, "")
	}
	if err := engine.CheckTenant(c.Principal.Tenant); err != nil {
		return usageErr(fmt.Errorf("%s: principal: %v", name, err), "")
	}
	if c.Identity == nil {
		return nil
	}
	if !reflect.DeepEqual(c.Principal, engine.Principal{}) {
		return usageErr(fmt.Errorf("%s: principal: and identity: both set: with identity, the token alone says who acts", name), "remove principal:")
	}
	if err := c.Identity.Check(); err != nil {
		return usageErr(fmt.Errorf("%s: %v", name, err), "docs/identity.md says what an identity section holds")
	}
	return nil
}

// noAssertedIdentity refuses a configured principal carrying what only a
// verified token may set.
func noAssertedIdentity(where string, p engine.Principal) error {
	if p.Authenticated != "" || p.Issuer != "" || p.KeyID != "" {
		return fmt.Errorf("%s: authenticated, issuer and key_id come from a verified token, never from configuration", where)
	}
	return nil
}

// gatewayPrincipal sets c.Principal: from the token with identity
// configured on stdio, else the configured name or the local user. On
// HTTP with identity, it sets lp's authenticator instead: each request's
// bearer token says whom it acts for. The expiry is the stdio token's,
// when the session must end.
func gatewayPrincipal(ctx context.Context, stderr io.Writer, c *gatewayConfig, lp *listenParams, tokenFile string) (time.Time, error) {
	if c.Identity == nil {
		if tokenFile != "" {
			return time.Time{}, usageErr(errors.New("--id-token-file without identity: in the config: nothing would check the token"), "")
		}
		c.Principal = localPrincipal(c.Principal)
		if c.Principal.Subject == "" {
			c.Principal.Subject = os.Getenv("USER")
		}
		if c.Principal.Subject == "" {
			return time.Time{}, noPrincipal()
		}
		return time.Time{}, nil
	}
	if lp.addr != "" {
		if tokenFile != "" {
			return time.Time{}, usageErr(errors.New("--id-token-file with --listen: on HTTP each request's bearer token says whom it acts for"), "")
		}
		v, err := newVerifier(ctx, *c.Identity)
		if err != nil {
			return time.Time{}, err
		}
		var told sync.Map // the principals whose unmapped groups were named
		lp.authn = func(ctx context.Context, token string) (engine.Principal, time.Time, error) {
			id, err := v.Verify(ctx, token)
			if err != nil {
				return engine.Principal{}, time.Time{}, err
			}
			if len(id.Unmapped) > 0 {
				if _, seen := told.LoadOrStore(id.Principal.Issuer+" "+id.Principal.Subject+" "+strings.Join(id.Unmapped, ","), true); !seen {
					fmt.Fprintf(stderr, "bailiff: %s's groups that grant nothing here: %s\n", shown(id.Principal.Subject), shownList(id.Unmapped))
				}
			}
			return id.Principal, id.Until, nil
		}
		lp.resource, lp.issuer = c.Identity.Audience, c.Identity.Issuer
		return time.Time{}, nil
	}
	p, expiry, err := verifiedPrincipal(ctx, stderr, *c.Identity, tokenFile)
	c.Principal = p
	return expiry, err
}

// tokenExpired ends a stdio session whose token expired.
func tokenExpired(expiry time.Time, subject string) error {
	return findingErr(fmt.Errorf("the token expired at %s: the session acting for %s has ended", expiry.UTC().Format(time.RFC3339), shown(subject)),
		"start the session again with a fresh token")
}

// serverEnviron is the environment a server is started with: bailiff's,
// without the token that says whom the agent acts for. The token is
// bailiff's to check; a server that held it could act as its subject
// anywhere that accepts it.
func serverEnviron() []string {
	env := os.Environ()
	return slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "BAILIFF_ID_TOKEN=") })
}

// noTokenToServers refuses a config that would hand a server the token
// that says whom the agent acts for: $BAILIFF_ID_TOKEN expanded into its
// URL, command, arguments, environment or directory, or set as its
// environment's variable of that name.
func noTokenToServers(name string, c *gatewayConfig) error {
	refers := func(s string) bool {
		found := false
		os.Expand(s, func(k string) string {
			found = found || k == "BAILIFF_ID_TOKEN"
			return ""
		})
		return found
	}
	for n, s := range c.Servers {
		texts := append([]string{s.URL, s.Command, s.Cwd}, s.Args...)
		for k, v := range s.Env {
			texts = append(texts, v)
			if k == "BAILIFF_ID_TOKEN" {
				texts = append(texts, "$BAILIFF_ID_TOKEN")
			}
		}
		if slices.ContainsFunc(texts, refers) {
			return usageErr(fmt.Errorf("%s: server %q would be handed $BAILIFF_ID_TOKEN: the token that says whom the agent acts for is bailiff's to check, never a server's", name, n), "give the server a credential of its own")
		}
	}
	return nil
}
