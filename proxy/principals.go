package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"bailiff/engine"
)

// Authenticator checks a bearer token: the principal it names, and until
// when the token is good (its expiry and the skew allowed on it). It is
// the caller's (cmd's identity); the proxy only asks it.
type Authenticator func(ctx context.Context, token string) (engine.Principal, time.Time, error)

// principalExtra keys the verified principal in a request's TokenInfo.
const principalExtra = "bailiff.principal"

// route finds the pump a tools/list or tools/call goes to.
type route func(req mcp.Request) (*muxStream, error)

// protectedResource wraps h so that every request carries a bearer token
// authn accepts, and serves the resource's metadata (RFC 9728) at the
// well-known path for resource, which a refusal's WWW-Authenticate names:
// an MCP client finds the issuer from there on its own. The token is
// never passed on: the pump's requests are its own.
func protectedResource(h http.Handler, authn Authenticator, pumps *pumps, resource, issuer string) (http.Handler, error) {
	u, err := url.Parse(resource)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("audience %q is not this gateway's http or https URL", resource)
	}
	meta := *u
	meta.Path = "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
	meta.RawQuery, meta.Fragment = "", ""
	verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		p, until, err := authn(ctx, token)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		// UserID binds a handshake session to the principal that opened
		// it, groups and scopes included: the SDK refuses a request in
		// it under any other token's (403), as it would another person's.
		return &auth.TokenInfo{UserID: principalKey(p), Expiration: until, Scopes: p.Scopes,
			Extra: map[string]any{principalExtra: p}}, nil
	}
	// A principal the gateway cannot serve is refused before its
	// session opens, with 503 and the reason, not at its first call.
	admitted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			if p, ok := ti.Extra[principalExtra].(engine.Principal); ok {
				if err := pumps.admit(p); err != nil {
					refuse(w, r, "bailiff: "+err.Error(), maxRetryAfter)
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
	metadata := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: resource, AuthorizationServers: []string{issuer}, BearerMethodsSupported: []string{"header"},
		ResourceName: "bailiff gateway"})
	protected := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: meta.String()})(admitted)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == meta.Path {
			metadata.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("Authorization") != "" {
			// A token was presented and may be refused: RFC 6750 has
			// the challenge say so (none is said when none was sent).
			w = &invalidTokenWriter{ResponseWriter: w}
		}
		protected.ServeHTTP(w, r)
	}), nil
}

// invalidTokenWriter adds error="invalid_token" to a 401's challenge.
type invalidTokenWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *invalidTokenWriter) WriteHeader(code int) {
	if !w.wrote && code == http.StatusUnauthorized {
		h := w.Header()
		if c := h.Get("WWW-Authenticate"); c != "" {
			h.Set("WWW-Authenticate", c+`, error="invalid_token"`)
		}
	}
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *invalidTokenWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes on to a writer that streams (the SDK's event streams).
func (w *invalidTokenWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (w *invalidTokenWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
