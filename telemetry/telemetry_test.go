package telemetry

import (
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"bailiff/chain"
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
