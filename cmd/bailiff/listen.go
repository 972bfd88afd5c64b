package main

import (
	"fmt"
	"net"

	"bailiff/proxy"
)

// listenParams are gateway's flags for serving Streamable HTTP.
type listenParams struct {
	addr        string
	allowRemote bool
	maxBytes    int64
	maxSessions int
	initRate    float64
	initBurst   int
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
	if lp.maxSessions <= 0 || lp.initBurst <= 0 || lp.initRate < 0 {
		return usageErr(fmt.Errorf("--max-sessions and --initialize-burst must be positive, --initialize-rate not negative"), "")
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
		InitRate: lp.initRate, InitBurst: lp.initBurst, NoInitRate: lp.initRate == 0}
}
