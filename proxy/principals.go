package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// principalPumps are a gateway's sessions when its HTTP requests carry
// verified tokens: one per principal, each with its own pump, servers
// and audit session, opened at the principal's first request. One
// principal's reads never taint another's sends, one's calls never spend
// another's budget, and each session record names whom it acted for.
// A principal's groups and scopes are part of who it is: a token naming
// the same subject with other groups gets a session of its own, so a
// group taken away is never still held by an older session.
type principalPumps struct {
	ctx context.Context
	opt Options
	ups []Upstream
	max int

	logf func(string, ...any)

	mu     sync.Mutex
	by     map[string]*pumpEntry
	closed bool
	wg     sync.WaitGroup
	told   time.Time // when a refusal was last logged
}

type pumpEntry struct {
	mux  *muxStream
	done chan struct{}
	err  error
}

// principalKey is who p is, as a map key: the groups in any order are
// the same groups. No part holds \x00 or \x01 (identity refuses control
// characters in names).
func principalKey(p engine.Principal) string {
	groups := slices.Sorted(slices.Values(p.Groups))
	return strings.Join([]string{p.Issuer, p.Subject, p.Email, strings.Join(groups, "\x00"), strings.Join(p.Scopes, "\x00")}, "\x01")
}

// get is the pump of p's session, opened if it is the first request.
func (pp *principalPumps) get(p engine.Principal) (*muxStream, error) {
	key := principalKey(p)
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if e := pp.by[key]; e != nil {
		select {
		case <-e.done:
			return nil, fmt.Errorf("bailiff: the session acting for %s has ended: %v", p.Subject, e.err)
		default:
			return e.mux, nil
		}
	}
	if pp.closed {
		return nil, errors.New("bailiff: the gateway is shutting down")
	}
	if len(pp.by) >= pp.max {
		err := fmt.Errorf("the gateway already serves %d principals (--max-principals), each until it stops: no session for %q", pp.max, p.Subject)
		if now := time.Now(); now.Sub(pp.told) >= refusalLogEvery {
			pp.told = now
			pp.logf("refused a principal: %v", err)
		}
		return nil, err
	}
	o := pp.opt
	o.Principal = p
	o.Session = fmt.Sprintf("%s-%d", pp.opt.Session, len(pp.by)+1)
	mux := newMuxStream()
	px := newProxyOn(o, mux)
	mux.own = func(state string) bool { _, err := openState(px.stateSecret, state); return err == nil }
	e := &pumpEntry{mux: mux, done: make(chan struct{})}
	pp.by[key] = e
	pp.logf("session %s acts for %q (token from %s; scopes %q)", o.Session, p.Subject, p.Issuer, p.Scopes)
	pp.wg.Add(1)
	go func() {
		defer pp.wg.Done()
		e.err = runGateway(pp.ctx, px, freshUpstreams(pp.ups))
		if e.err == nil {
			e.err = errors.New("its servers have stopped")
		}
		px.logf("session %s (%q) ended: %v", o.Session, p.Subject, e.err)
		mux.close()
		close(e.done)
	}()
	return mux, nil
}

// close ends every session and waits for their servers to stop.
func (pp *principalPumps) close() {
	pp.mu.Lock()
	pp.closed = true
	for _, e := range pp.by {
		e.mux.close()
	}
	pp.mu.Unlock()
	pp.wg.Wait()
}

// route sends a request to the session of the principal its token names.
func (pp *principalPumps) route(req mcp.Request) (*muxStream, error) {
	var p engine.Principal
	ok := false
	if x := req.GetExtra(); x != nil && x.TokenInfo != nil {
		p, ok = x.TokenInfo.Extra[principalExtra].(engine.Principal)
	}
	if !ok {
		// The bearer middleware lets nothing through without it.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "bailiff: a request with no verified principal"}
	}
	m, err := pp.get(p)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return m, nil
}

// freshUpstreams are ups with commands that have not run: a command runs
// once, and every principal's session starts its servers anew.
func freshUpstreams(ups []Upstream) []Upstream {
	out := make([]Upstream, len(ups))
	for i, u := range ups {
		out[i] = u
		if u.Cmd != nil {
			c := &exec.Cmd{Path: u.Cmd.Path, Args: u.Cmd.Args, Env: u.Cmd.Env, Dir: u.Cmd.Dir, Err: u.Cmd.Err}
			out[i].Cmd = c
		}
	}
	return out
}

// protectedResource wraps h so that every request carries a bearer token
// authn accepts, and serves the resource's metadata (RFC 9728) at the
// well-known path for resource, which a refusal's WWW-Authenticate names:
// an MCP client finds the issuer from there on its own. The token is
// never passed on: the pump's requests are its own.
func protectedResource(h http.Handler, authn Authenticator, pumps *principalPumps, resource, issuer string) (http.Handler, error) {
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
				if _, err := pumps.get(p); err != nil {
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
