package main

import (
	"fmt"
	"math"
	"net"

	"bailiff/proxy"
)

// minInitRate is the slowest --initialize-rate: one session a minute.
const minInitRate = 1.0 / 60

// listenParams are gateway's flags for serving Streamable HTTP.
type listenParams struct {
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
}

// checkListen refuses an address off this machine unless asked for:
// the gateway has no authentication of its own.
func checkListen(lp listenParams) error {
	host, _, err := net.SplitHostPort(lp.addr)
	if err != nil {
		return usageErr(fmt.Errorf("--listen %q is not host:port: %v", lp.addr, err), "bailiff gateway --config gateway.yaml --listen 127.0.0.1:8931")
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
		return usageErr(fmt.Errorf("--listen %s is reachable from other machines, and the gateway authenticates no one: listen on 127.0.0.1, or add --allow-remote", lp.addr), "bailiff gateway --config gateway.yaml --listen 127.0.0.1:8931")
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
