package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"bailiff/proxy"
	"bailiff/telemetry"
)

// metricsParams is --metrics, which run and gateway share.
type metricsParams struct {
	addr string
}

func (m *metricsParams) register(c *cobra.Command) {
	c.Flags().StringVar(&m.addr, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics, a listener of its own (host:port, loopback unless --allow-remote)")
}

// check refuses an address off this machine unless allowRemote: the
// metrics name servers and tools, and no one is authenticated on them.
func (m *metricsParams) check(allowRemote bool) error {
	if m.addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(m.addr)
	if err != nil {
		return usageErr(fmt.Errorf("--metrics %q is not host:port: %v", m.addr, err), "--metrics 127.0.0.1:9464")
	}
	ip := net.ParseIP(host)
	if !allowRemote && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageErr(fmt.Errorf("--metrics %s is reachable from other machines, and no one is authenticated on it: use 127.0.0.1, or add --allow-remote (with --listen)", m.addr), "--metrics 127.0.0.1:9464")
	}
	return nil
}

// start binds the metrics listener and serves it until ctx ends; the
// gateway's options get the metrics' telemetry and their timed log. It
// binds before the gateway says anything, so an address in use is the
// whole story.
func (m *metricsParams) start(ctx context.Context, stderr io.Writer, opt *proxy.Options) (stop func(), err error) {
	if m.addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", m.addr)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--metrics: %v", err), "")
	}
	var pending func() (int, error)
	if a := opt.Approvals; a != nil && a.Store != nil {
		pending = func() (int, error) {
			asks, err := a.Store.Pending(a.Log)
			return len(asks), err
		}
	}
	met := telemetry.New(telemetry.Options{Pending: pending})
	opt.Telemetry = met
	opt.Log = met.Log(opt.Log)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", met.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "bailiff: warning: the metrics listener stopped: %v\n", err)
		}
	}()
	fmt.Fprintf(stderr, "bailiff: metrics at http://%s/metrics\n", ln.Addr())
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-stopped:
		}
		srv.Close()
	}()
	return func() { close(stopped) }, nil
}
