package telemetry

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
)

// The caps on label values, per dimension.
const (
	MaxServers        = 64
	MaxToolsPerServer = 100
	MaxChecks         = 32
)

// Metrics are a gateway's Prometheus metrics, in a registry of their own.
type Metrics struct {
	reg         *prometheus.Registry
	decisions   *prometheus.CounterVec
	added       *prometheus.HistogramVec
	upstream    *prometheus.HistogramVec
	auditWrite  prometheus.Histogram
	auditErrors prometheus.Counter
	servers     *bounded
	checks      *bounded
	tools       *tools
}

// latencyBuckets run from 100 µs to 10 s: what bailiff adds is meant to
// be well under a millisecond, and an upstream may take seconds. Written
// out, so each le label is the number a query names.
var latencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Options are what the metrics read when scraped.
type Options struct {
	// Pending, when set, is how many asks wait for a human now.
	Pending func() (int, error)
	// Headroom, when set, is each tenant's budget headroom now.
	Headroom func() ([]engine.Headroom, error)
}

// New makes the metrics.
func New(opt Options) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bailiff_decisions_total",
			Help: "Recorded tools/call decisions, by verdict, the check that decided, server and tool.",
		}, []string{"verdict", "check", "server", "tool"}),
		added: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bailiff_added_seconds",
			Help:    "Time bailiff adds to a call it decides without a human: deciding, recording and relaying, without the upstream's round trip.",
			Buckets: latencyBuckets,
		}, []string{"server", "verdict"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bailiff_upstream_seconds",
			Help:    "Round trip of a forwarded call to its server, by whether it answered.",
			Buckets: latencyBuckets,
		}, []string{"server", "outcome"}),
		auditWrite: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "bailiff_audit_write_seconds",
			Help:    "Time to append one audit record, its fsync included where the durability asks for one.",
			Buckets: latencyBuckets,
		}),
		auditErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bailiff_audit_write_errors_total",
			Help: "Audit records that could not be written or synced; the call each belonged to was refused.",
		}),
		servers: newBounded(MaxServers),
		checks:  newBounded(MaxChecks),
		tools:   &tools{perSrv: MaxToolsPerServer, byServer: map[string]*bounded{}},
	}
	m.reg.MustRegister(m.decisions, m.added, m.upstream, m.auditWrite, m.auditErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if opt.Headroom != nil {
		m.reg.MustRegister(newHeadroom(cached(opt.Headroom)))
	}
	if opt.Pending != nil {
		pending := cached(opt.Pending)
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "bailiff_pending_asks",
			Help: "Asks waiting for a human's answer in the state database (-1 when it cannot be read).",
		}, func() float64 {
			n, err := pending()
			if err != nil {
				return -1
			}
			return float64(n)
		}))
	}
	return m
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	// A few scrapes at once, then 503: each reads the state database.
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 4})
}

// verdicts are the engine's verdicts; anything else is a bug, counted
// apart rather than as a series of its own.
func verdict(v string) string {
	switch v {
	case "allow", "deny", "ask":
		return v
	}
	return Other
}

// Decided counts one recorded decision. pinned is false for a call the
// pinning check refused: its tool is no tool the session has.
func (m *Metrics) Decided(server, tool string, pinned bool, v, check string) {
	srv := m.servers.value(server)
	t := Unpinned
	if pinned {
		t = m.tools.value(srv, tool)
	}
	m.decisions.WithLabelValues(verdict(v), m.checks.value(check), srv, t).Inc()
}

// Added observes what bailiff added to a call decided without a human.
func (m *Metrics) Added(server, v string, d time.Duration) {
	m.added.WithLabelValues(m.servers.value(server), verdict(v)).Observe(d.Seconds())
}

// Upstream observes a forwarded call's round trip; answered is false
// when the server did not answer (it exited, timed out, could not be
// written to).
func (m *Metrics) Upstream(server string, answered bool, d time.Duration) {
	outcome := "answered"
	if !answered {
		outcome = "failed"
	}
	m.upstream.WithLabelValues(m.servers.value(server), outcome).Observe(d.Seconds())
}

// Log is l with each append timed and each failure counted.
func (m *Metrics) Log(l audit.Log) audit.Log { return &timedLog{l, m} }

type timedLog struct {
	audit.Log
	m *Metrics
}

func (t *timedLog) Append(ts time.Time, session string, kind chain.Kind, body any) (chain.Record, error) {
	return t.observe(func() (chain.Record, error) { return t.Log.Append(ts, session, kind, body) })
}

func (t *timedLog) AppendLazy(ts time.Time, session string, kind chain.Kind, body any) (chain.Record, error) {
	return t.observe(func() (chain.Record, error) { return t.Log.AppendLazy(ts, session, kind, body) })
}

func (t *timedLog) observe(write func() (chain.Record, error)) (chain.Record, error) {
	start := time.Now()
	rec, err := write()
	t.m.auditWrite.Observe(time.Since(start).Seconds())
	if err != nil {
		t.m.auditErrors.Inc()
	}
	return rec, err
}

// readEvery is how often the gauges read from the state database are
// read at most: scrapes, however many, wait for one read a second, which
// waits for a call's step and holds up the next.
var readEvery = time.Second

// cached is read, read again at most once per readEvery.
func cached[T any](read func() (T, error)) func() (T, error) {
	var mu sync.Mutex
	var at time.Time
	var v T
	var err error
	return func() (T, error) {
		mu.Lock()
		defer mu.Unlock()
		if at.IsZero() || time.Since(at) >= readEvery {
			v, err = read()
			at = time.Now()
		}
		return v, err
	}
}
