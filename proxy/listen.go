package proxy

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"
)

// A gateway served on Streamable HTTP (bailiff gateway --listen) is the
// SDK's own HTTP handler around an SDK server, which does what the
// transport needs: the revisions and their headers, sessions and
// stateless requests, event streams, DNS-rebinding protection, the body
// limit. The server's tools/list and tools/call are not its own: a
// middleware hands each to its client's pump (muxStream, pumps.go),
// which decides, logs and routes it exactly as for a client on stdio.
// Each client session is a session of its own, with its own servers,
// taint and budgets, in the one audit log; what one client read never
// taints what another sends.

// HTTPOptions configure a gateway served on Streamable HTTP.
type HTTPOptions struct {
	// MaxRequestBytes bounds an HTTP request's body (default 4 MiB);
	// a longer one is refused with 413.
	MaxRequestBytes int64
	// SessionTimeout ends a session of the handshake revisions idle this
	// long (default 30 minutes).
	SessionTimeout time.Duration
	// MaxSessions bounds the handshake sessions open at once (default
	// 256); a request that would open another gets 503 and Retry-After
	// while the open ones go on.
	MaxSessions int
	// InitRate and InitBurst bound, per client IP, the requests that
	// open a session: a token bucket of InitBurst refilled at InitRate a
	// second (default 20 and 2). One over gets 503. NoInitRate turns the
	// bound off.
	InitRate   float64
	InitBurst  int
	NoInitRate bool
	// Authenticate, when set, checks every request's bearer token: one
	// without a token, or with one it refuses, gets 401 and a
	// WWW-Authenticate header naming the metadata served for Resource
	// (this gateway's URL, the tokens' audience), whose authorization
	// server is Issuer. Each principal then gets a session of its own,
	// at most MaxPrincipals (default 64) at once.
	Authenticate  Authenticator
	Resource      string
	Issuer        string
	MaxPrincipals int
	// MaxSessionsPerPrincipal bounds the handshake sessions one principal
	// holds open (default a quarter of MaxSessions), and InitRate and
	// InitBurst hold per principal too, so one user cannot fill the
	// gateway.
	MaxSessionsPerPrincipal int
	// MaxServerSessions bounds the sessions that run their own instances
	// of the servers at once (default 64): a handshake session's start
	// at its initialize, a stateless one's at its first request that
	// needs them, and one past the bound is refused.
	MaxServerSessions int
}

const defaultMaxRequestBytes = 4 << 20

// gatewayServer is the SDK server the stateless requests talk to: tools
// and what the gateway federates go to the pump route finds, through its
// mux (federate.go answers there as for any client).
func gatewayServer(to route) *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "bailiff-gateway", Version: "1"}, &mcp.ServerOptions{
		Instructions: gatewayInstructions,
		// list_changed would need a stream to every client; the pump's
		// is not relayed (docs/proxy.md), so none is promised. The
		// servers behind are not known here (each principal's session
		// starts its own): resources, prompts and completions are
		// offered, and a session whose servers serve none lists none.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{},
			Prompts: &mcp.PromptCapabilities{}, Completions: &mcp.CompletionCapabilities{}},
	})
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" && statelessResults[method] == nil {
				return next(ctx, method, req)
			}
			mux, err := to(req)
			if err != nil {
				return nil, err
			}
			if method == "tools/call" {
				return mux.call(ctx, req)
			}
			return mux.forward(ctx, method, req.GetParams(), false)
		}
	})
	return server
}

// statelessResults are the methods a stateless request's pump answers
// besides tools/call, each with the SDK type its answer is read into.
var statelessResults = map[string]func() mcp.Result{
	"tools/list":               func() mcp.Result { return &mcp.ListToolsResult{} },
	"resources/list":           func() mcp.Result { return &mcp.ListResourcesResult{} },
	"resources/templates/list": func() mcp.Result { return &mcp.ListResourceTemplatesResult{} },
	"resources/read":           func() mcp.Result { return &mcp.ReadResourceResult{} },
	"prompts/list":             func() mcp.Result { return &mcp.ListPromptsResult{} },
	"prompts/get":              func() mcp.Result { return &mcp.GetPromptResult{} },
	"completion/complete":      func() mcp.Result { return &mcp.CompleteResult{} },
}

// gatewayHandler serves the gateway over Streamable HTTP, to pages on
// this machine only. A handshake session is a relay session (runhttp.go)
// whose pump is a gateway's, exactly as on stdio: it answers initialize
// itself, federates, and relays its servers' requests to its client on
// the stream of the request they belong to. The stateless revision has
// no session to relay on: its requests go to the SDK's stateless handler,
// whose tools/list and tools/call go to the principal's shared pump.
func gatewayHandler(to route, sessions *relaySessions, hopt HTTPOptions) http.Handler {
	server := gatewayServer(to)
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, MaxRequestBodyBytes: hopt.MaxRequestBytes})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := offMachine(r); why != "" {
			// A page in a browser may reach a loopback port; only pages
			// served from this machine may talk to the gateway.
			http.Error(w, "Forbidden: "+why, http.StatusForbidden)
			return
		}
		// Revisions order as strings.
		if r.Header.Get("Mcp-Protocol-Version") >= revStateless {
			stateless.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
}

// ServeGatewayHTTP serves a gateway in front of ups on ln until ctx ends.
// The caller chooses ln; it binds to loopback unless told otherwise.
func ServeGatewayHTTP(ctx context.Context, opt Options, ln net.Listener, ups []Upstream, hopt HTTPOptions) error {
	return serveListening(ctx, opt, opt, ln, ups, hopt, func(ctx context.Context, o Options, down stream) error {
		return runGateway(ctx, newProxyOn(o, down), freshUpstreams(ups))
	})
}

// serveListening serves on ln until ctx ends: each handshake session as
// a relay session whose pump start runs (under opt), the stateless
// requests of each principal through one gateway pump in front of ups
// (under pumpOpt).
func serveListening(ctx context.Context, opt, pumpOpt Options, ln net.Listener, ups []Upstream, hopt HTTPOptions, start func(context.Context, Options, stream) error) error {
	hopt = hopt.withDefaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, u := range ups {
		if u.Cmd == nil {
			continue
		}
		err := u.Cmd.Err
		if err == nil && filepath.IsAbs(u.Cmd.Path) {
			_, err = exec.LookPath(u.Cmd.Path)
		}
		if err != nil {
			// Each client session starts the servers anew: one that
			// cannot be found is refused now, not at every session.
			return fmt.Errorf("start %s: %w", u.Name, err)
		}
	}
	p := newProxyOn(opt, newMuxStream()) // for the defaults
	opt = p.opt
	pumpOpt = newProxyOn(pumpOpt, newMuxStream()).opt

	pumps := newPumps(ctx, pumpOpt, ups, hopt, p.logf)
	defer pumps.close()
	sessions := newRelaySessions(ctx, opt, hopt, p.logf, start)
	sessions.principals, sessions.opened = pumps, pumps.opened
	// Every session runs the servers, stateless or not: one cap holds
	// for both.
	pumps.relayed = func() int { return int(sessions.live.Load()) }
	sessions.adm.open = func() iter.Seq[string] {
		return func(yield func(string) bool) {
			for id := range sessions.ids() {
				if !yield(id) {
					return
				}
			}
			for k := range pumps.keys() {
				if !yield(k) {
					return
				}
			}
		}
	}
	defer sessions.close()
	var h http.Handler = gatewayHandler(pumps.route, sessions, hopt)
	if hopt.Authenticate != nil {
		var err error
		if h, err = protectedResource(h, hopt.Authenticate, pumps, hopt.Resource, hopt.Issuer); err != nil {
			return err
		}
	}
	return serveHTTP(ctx, ln, h, opt, sessions.hangUp)
}

// serveHTTP serves h on ln until ctx ends. The write side is bounded by
// what a call may take: CallTimeout, and as long again for an answer to
// an ask. onShutdown, if set, runs as the shutdown begins.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, opt Options, onShutdown func()) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      opt.CallTimeout + opt.AskTimeout + time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	if onShutdown != nil {
		srv.RegisterOnShutdown(onShutdown)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var err error
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	shut, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	_ = srv.Shutdown(shut)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// withDefaults is h with each unset bound at its default.
func (h HTTPOptions) withDefaults() HTTPOptions {
	if h.MaxRequestBytes <= 0 {
		h.MaxRequestBytes = defaultMaxRequestBytes
	}
	if h.SessionTimeout <= 0 {
		h.SessionTimeout = 30 * time.Minute
	}
	if h.MaxSessions <= 0 {
		h.MaxSessions = defaultMaxSessions
	}
	if h.InitRate <= 0 {
		h.InitRate = float64(defaultInitRate)
	}
	if h.InitBurst <= 0 {
		h.InitBurst = defaultInitBurst
	}
	if h.MaxServerSessions <= 0 {
		h.MaxServerSessions = defaultMaxServerSessions
	}
	if h.MaxSessionsPerPrincipal <= 0 {
		h.MaxSessionsPerPrincipal = max(1, h.MaxSessions/4)
	}
	if h.MaxPrincipals <= 0 {
		h.MaxPrincipals = defaultMaxPrincipals
	}
	return h
}

// loopbackOrigin reports whether an Origin names this machine.
func loopbackOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// initLimit is the rate of new sessions one address may open.
func (h HTTPOptions) initLimit() rate.Limit {
	if h.NoInitRate {
		return rate.Inf
	}
	return rate.Limit(h.InitRate)
}
