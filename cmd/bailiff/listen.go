package main

import (
	"fmt"
	"math"
	"net"
	"strings"

	"github.com/spf13/cobra"

	"bailiff/proxy"
)

// minInitRate is the slowest --initialize-rate: one session a minute.
const minInitRate = 1.0 / 60

// listenParams are the flags of gateway and run for serving Streamable
// HTTP.
type listenParams struct {
	// example is the command a usage error suggests.
	example     string
	addr        string
	allowRemote bool
	maxBytes    int64
	maxSessions int
	initRate    float64
	initBurst   int
	// maxPrincipals bounds the principals served at once, with identity,
	// and perPrincipal the sessions each holds open (0: a quarter of
	// maxSessions).
	maxPrincipals, perPrincipal int
	// serverSessions bounds the sessions running their own servers.
	serverSessions int
	// With identity, every request's bearer token is checked by authn,
	// as a token for resource issued by issuer.
	authn            proxy.Authenticator
	resource, issuer string
	// metrics is --metrics, with or without --listen.
	metrics metricsParams
}

// checkListen refuses an address off this machine unless asked for:
// the gateway has no authentication of its own.
func checkListen(lp listenParams) error {
	if lp.example == "" {
		lp.example = "bailiff gateway --config gateway.yaml --listen 127.0.0.1:8931"
	}
	host, _, err := net.SplitHostPort(lp.addr)
	if err != nil {
		return usageErr(fmt.Errorf("--listen %q is not host:port: %v", lp.addr, err), lp.example)
	}
	if lp.maxBytes <= 0 {
		return usageErr(fmt.Errorf("--max-request-bytes must be positive"), "")
	}
	switch {
	case lp.maxSessions <= 0:
		return usageErr(fmt.Errorf("--max-sessions %d: must be positive", lp.maxSessions), "")
	case lp.initBurst <= 0:
		return usageErr(fmt.Errorf("--initialize-burst %d: must be positive", lp.initBurst), "")
	case lp.maxPrincipals <= 0:
		return usageErr(fmt.Errorf("--max-principals %d: must be positive", lp.maxPrincipals), "")
	case lp.serverSessions <= 0:
		return usageErr(fmt.Errorf("--max-server-sessions %d: must be positive", lp.serverSessions), "")
	case lp.perPrincipal < 0:
		return usageErr(fmt.Errorf("--max-sessions-per-principal %d: must be positive, or 0 for a quarter of --max-sessions", lp.perPrincipal), "")
	case math.IsNaN(lp.initRate) || math.IsInf(lp.initRate, 0) || lp.initRate < 0:
		return usageErr(fmt.Errorf("--initialize-rate %v: must be a number of sessions a second, 0 for no limit", lp.initRate), "")
	case lp.initRate > 0 && lp.initRate < minInitRate:
		// A slower refill tells a refused client to come back in days.
		return usageErr(fmt.Errorf("--initialize-rate %v: below %v a second, a refused client would wait hours; use 0 for no limit", lp.initRate, minInitRate), "")
	}
	if lp.allowRemote {
		return nil
	}
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageErr(fmt.Errorf("--listen %s is reachable from other machines, and bailiff authenticates no one on it: listen on 127.0.0.1, or add --allow-remote", lp.addr), lp.example)
	}
	return nil
}

// httpOptions are the proxy's options for lp; --initialize-rate 0 turns
// the rate off, where the proxy's zero means its default.
func (lp listenParams) httpOptions() proxy.HTTPOptions {
	return proxy.HTTPOptions{MaxRequestBytes: lp.maxBytes, MaxSessions: lp.maxSessions,
		InitRate: lp.initRate, InitBurst: lp.initBurst, NoInitRate: lp.initRate == 0,
		Authenticate: lp.authn, Resource: lp.resource, Issuer: lp.issuer, MaxPrincipals: lp.maxPrincipals, MaxSessionsPerPrincipal: lp.perPrincipal, MaxServerSessions: lp.serverSessions}
}

// registerHTTP registers the flags of --listen that gateway and run share.
func (lp *listenParams) registerHTTP(c *cobra.Command, sessions int, sessionsHelp string) {
	c.Flags().StringVar(&lp.addr, "listen", "", "serve Streamable HTTP on this address (host:port, loopback) instead of stdio")
	c.Flags().BoolVar(&lp.allowRemote, "allow-remote", false, "let --listen bind to an address other machines can reach")
	c.Flags().Int64Var(&lp.maxBytes, "max-request-bytes", 4<<20, "the largest HTTP request body --listen reads")
	c.Flags().IntVar(&lp.maxSessions, "max-sessions", sessions, sessionsHelp)
	c.Flags().Float64Var(&lp.initRate, "initialize-rate", 2, "sessions one client address may open a second, after the burst (0: no limit)")
	c.Flags().IntVar(&lp.initBurst, "initialize-burst", 20, "sessions one client address may open at once")
}

// onlyWithListen refuses the HTTP flags without --listen.
func onlyWithListen(cmd *cobra.Command, flags []string, example string) error {
	for _, f := range flags {
		if cmd.Flags().Changed(f) {
			// The flag goes before a server command, which takes
			// everything after "--" as its own.
			hint := example + " --" + f + " …"
			if before, after, ok := strings.Cut(example, " -- "); ok {
				hint = before + " --" + f + " … -- " + after
			}
			return usageErr(fmt.Errorf("--%s applies to --listen only; without it bailiff serves stdio", f), hint)
		}
	}
	return nil
}
