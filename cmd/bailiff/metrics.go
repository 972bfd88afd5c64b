package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"bailiff/engine"
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

// start turns on what the gateway tells: the metrics listener, bound
// before the gateway says anything so an address in use is the whole
// story, and traces when the OTEL_* variables ask for them. The
// gateway's options get the telemetry and the timed log; stop sends the
// spans still held.
func (m *metricsParams) start(ctx context.Context, stderr io.Writer, opt *proxy.Options) (stop func(), err error) {
	tr, err := telemetry.NewTracing(ctx, os.Getenv, version(), stderr)
	if err != nil {
		return nil, usageErr(err, "set OTEL_TRACES_EXPORTER=none to run without traces")
	}
	g := &telemetry.Gateway{Tracing: tr}
	stopMetrics, err := m.serve(ctx, stderr, opt, g)
	if err != nil {
		return nil, err
	}
	if tr != nil {
		fmt.Fprintf(stderr, "bailiff: tracing each tools/call to %s\n", tr.Endpoint)
	}
	if g.Metrics != nil || g.Tracing != nil {
		opt.Telemetry = gatewayTelemetry{g}
		opt.Log = g.Log(opt.Log)
	}
	return func() {
		stopMetrics()
		if tr != nil {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tr.Shutdown(sctx); err != nil {
				fmt.Fprintf(stderr, "bailiff: warning: spans not sent: %v\n", err)
			}
		}
	}, nil
}

// gatewayTelemetry is the telemetry as the proxy takes it: its spans are
// the proxy's CallSpans.
type gatewayTelemetry struct{ *telemetry.Gateway }

func (g gatewayTelemetry) StartCall(tool, parent, state string) proxy.CallSpan {
	return g.Gateway.StartCall(tool, parent, state)
}

// serve binds the metrics listener, if asked for, and serves it until
// ctx ends or stop.
func (m *metricsParams) serve(ctx context.Context, stderr io.Writer, opt *proxy.Options, g *telemetry.Gateway) (stop func(), err error) {
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
	var headroom func() ([]engine.Headroom, error)
	if l, pol := opt.Ledger, opt.Policy; l != nil && pol != nil && pol.HasTenants() {
		headroom = func() ([]engine.Headroom, error) { return l.Headroom(pol, time.Now()) }
	}
	g.Metrics = telemetry.New(telemetry.Options{Pending: pending, Headroom: headroom})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", g.Metrics.Handler())
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
