package telemetry

import (
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"bailiff/chain"
	"bailiff/engine"
)

// TestLabelsBounded: names past a dimension's cap, too long, or not UTF-8
// are Other; names kept stay themselves; one server's tools do not use up
// another's.
func TestLabelsBounded(t *testing.T) {
	tl := &tools{perSrv: 3, byServer: map[string]*bounded{}}
	for i := range 10 {
		got := tl.value("evil", fmt.Sprint("t", i))
		if want := fmt.Sprint("t", i); i >= 3 {
			want = Other
			if got != want {
				t.Errorf("tool %d of a server capped at 3: %q", i, got)
			}
		} else if got != want {
			t.Errorf("tool %d: %q", i, got)
		}
	}
	if got := tl.value("evil", "t1"); got != "t1" {
		t.Errorf("a kept tool seen again: %q", got)
	}
	if got := tl.value("good", "read"); got != "read" {
		t.Errorf("another server's first tool: %q", got)
	}
	b := newBounded(10)
	for _, name := range []string{"", strings.Repeat("x", maxLabel+1), "bad\xff"} {
		if got := b.value(name); got != Other {
			t.Errorf("%q: %q, want %s", name, got, Other)
		}
	}
}

type failingLog struct{ err error }

func (f failingLog) Append(time.Time, string, chain.Kind, any) (chain.Record, error) {
	return chain.Record{}, f.err
}
func (f failingLog) AppendLazy(time.Time, string, chain.Kind, any) (chain.Record, error) {
	return chain.Record{}, f.err
}
func (failingLog) Next() int64 { return 0 }

// TestMetricsText: what a scrape shows of decisions, unknown verdicts,
// audit writes and their failures, and the pending asks.
func TestMetricsText(t *testing.T) {
	m := New(Options{Pending: func() (int, error) { return 0, errors.New("database down") }})
	m.Decided("fs", "write_file", true, "deny", "path")
	m.Decided("fs", "whatever", false, "deny", "pinning")
	m.Decided("fs", "read_file", true, "maybe", "rules")
	m.Added("fs", "deny", time.Millisecond)
	m.Upstream("fs", false, time.Second)
	l := m.Log(failingLog{errors.New("fsync: input/output error")})
	l.Append(time.Now(), "s", chain.KindCall, nil)
	l.AppendLazy(time.Now(), "s", chain.KindCall, nil)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`bailiff_decisions_total{check="path",server="fs",tool="write_file",verdict="deny"} 1`,
		`bailiff_decisions_total{check="pinning",server="fs",tool="_unpinned",verdict="deny"} 1`,
		`bailiff_decisions_total{check="rules",server="fs",tool="read_file",verdict="_other"} 1`,
		`bailiff_added_seconds_count{server="fs",verdict="deny"} 1`,
		`bailiff_upstream_seconds_count{outcome="failed",server="fs"} 1`,
		`bailiff_audit_write_seconds_count 2`,
		`bailiff_audit_write_errors_total 2`,
		`bailiff_pending_asks -1`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("the scrape lacks %s", want)
		}
	}
}

// TestTracingFromEnvironment: tracing is off unless the OTEL_* variables
// ask for it, and a setting bailiff cannot honour is an error, never
// traces silently lost.
func TestTracingFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		on   bool
		fail string
	}{
		{env: nil},
		{env: map[string]string{"OTEL_SERVICE_NAME": "x"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, fail: "OTLP only"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, fail: "http/protobuf"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, fail: "http/protobuf"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_TRACES_EXPORTER": "otlp"}, fail: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318"}, fail: "is not an http:// or https:// URL"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://x"}, fail: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=ftp://x"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, fail: "OTEL_EXPORTER_OTLP_CERTIFICATE"},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v) // the exporter reads the endpoint itself
		}
		tr, err := NewTracing(t.Context(), func(k string) string { return tc.env[k] }, "test", io.Discard)
		switch {
		case tc.fail != "":
			if err == nil || !strings.Contains(err.Error(), tc.fail) {
				t.Errorf("%v: %v, want an error naming %s", tc.env, err, tc.fail)
			}
		case err != nil || (tr != nil) != tc.on:
			t.Errorf("%v: tracing %v, error %v; want on %v", tc.env, tr != nil, err, tc.on)
		}
		if tr != nil {
			tr.Shutdown(t.Context())
		}
		for k := range tc.env {
			os.Unsetenv(k)
		}
	}
}

func scrapeText(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}

// TestHeadroomMetrics: each tenant's headroom and ceiling, never below
// zero; past 64 tenants the rest are counted, not listed; counters that
// cannot be read show no headroom and say so.
func TestHeadroomMetrics(t *testing.T) {
	rows := []engine.Headroom{{Tenant: "acme", Window: "24h", Ceiling: 10, Spent: 4}, {Tenant: "globex", Window: "day", Ceiling: 5, Spent: 7}}
	for i := range 70 {
		rows = append(rows, engine.Headroom{Tenant: fmt.Sprintf("t%03d", i), Window: "24h", Ceiling: 1})
	}
	var fail error
	m := New(Options{Headroom: func() ([]engine.Headroom, error) { return rows, fail }})
	text := scrapeText(t, m)
	for _, want := range []string{
		`bailiff_tenant_budget_headroom{tenant="acme",window="24h"} 6`,
		`bailiff_tenant_budget_ceiling{tenant="acme",window="24h"} 10`,
		`bailiff_tenant_budget_headroom{tenant="globex",window="day"} 0`,
		`bailiff_tenant_budget_unlisted 8`,
		`bailiff_tenant_budget_readable 1`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("the scrape lacks %s", want)
		}
	}
	if n := strings.Count(text, "\nbailiff_tenant_budget_headroom{"); n != MaxTenants {
		t.Errorf("%d tenants listed, want %d", n, MaxTenants)
	}
	fail = errors.New("database down")
	budget := func(text string) (out []string) {
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "bailiff_tenant_budget") {
				out = append(out, l)
			}
		}
		return out
	}
	if fmt.Sprint(budget(scrapeText(t, m))) != fmt.Sprint(budget(text)) {
		t.Error("a second scrape within a second read the counters again")
	}
	readEvery = 0
	defer func() { readEvery = time.Second }()
	text = scrapeText(t, m)
	if !strings.Contains(text, "bailiff_tenant_budget_readable 0\n") || strings.Contains(text, "bailiff_tenant_budget_headroom{") {
		t.Errorf("counters unreadable:\n%s", text)
	}
}

// TestWarnerRateLimited: a collector that cannot be reached is said once,
// not at every batch.
func TestWarnerRateLimited(t *testing.T) {
	var b strings.Builder
	h := &warner{w: &b}
	for range 5 {
		h.Handle(errors.New("connection refused"))
	}
	if got := b.String(); got != "bailiff: warning: traces: connection refused\n" || h.hidden != 4 {
		t.Fatalf("five errors within a minute said as %q, %d hidden", got, h.hidden)
	}
	h.last = time.Now().Add(-2 * time.Minute)
	h.Handle(errors.New("connection refused"))
	if !strings.Contains(b.String(), "(and 4 more since the last warning)") {
		t.Fatalf("the next warning: %q", b.String())
	}
}

// TestTraceEndpoint: where spans go, as the OTLP specification reads the
// variables.
func TestTraceEndpoint(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "http://localhost:4318/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}, "http://c:4318/v1/traces"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t:443/x"}, "https://t:443/x"},
	} {
		got, err := traceEndpoint(func(k string) string { return tc.env[k] })
		if err != nil || got != tc.want {
			t.Errorf("%v: %q, %v; want %q", tc.env, got, err, tc.want)
		}
	}
}
