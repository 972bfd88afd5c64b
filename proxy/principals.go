package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
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

	mu     sync.Mutex
	by     map[string]*pumpEntry
	closed bool
	wg     sync.WaitGroup
}

type pumpEntry struct {
	mux  *muxStream
	done chan struct{}
	err  error
}

var errTooManyPrincipals = errors.New("bailiff: the gateway serves as many principals as it may (--max-principals): try again later")

func principalKey(p engine.Principal) string {
	return strings.Join([]string{p.Issuer, p.Subject, p.Email, strings.Join(p.Groups, "\x00"), strings.Join(p.Scopes, "\x00")}, "\x01")
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
		return nil, errTooManyPrincipals
	}
	o := pp.opt
	o.Principal = p
	o.Session = fmt.Sprintf("%s-%d", pp.opt.Session, len(pp.by)+1)
	mux := newMuxStream()
	px := newProxyOn(o, mux)
	mux.own = func(state string) bool { _, err := openState(px.stateSecret, state); return err == nil }
	e := &pumpEntry{mux: mux, done: make(chan struct{})}
	pp.by[key] = e
	pp.wg.Add(1)
	go func() {
		defer pp.wg.Done()
		e.err = runGateway(pp.ctx, px, freshUpstreams(pp.ups))
		if e.err == nil {
			e.err = errors.New("its servers have stopped")
		}
		px.logf("bailiff: session %s (%s) ended: %v", o.Session, p.Subject, e.err)
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
func protectedResource(h http.Handler, authn Authenticator, resource, issuer string) (http.Handler, error) {
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
		// UserID binds a handshake session to whom opened it: the SDK
		// refuses a request in it under anyone else's token.
		return &auth.TokenInfo{UserID: p.Issuer + " " + p.Subject, Expiration: until, Scopes: p.Scopes,
			Extra: map[string]any{principalExtra: p}}, nil
	}
	metadata := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: resource, AuthorizationServers: []string{issuer}, BearerMethodsSupported: []string{"header"},
		ResourceName: "bailiff gateway"})
	protected := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: meta.String()})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == meta.Path {
			metadata.ServeHTTP(w, r)
			return
		}
		protected.ServeHTTP(w, r)
	}), nil
}
