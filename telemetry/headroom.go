package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"bailiff/engine"
)

// MaxTenants bounds the tenants whose headroom is a series; the rest are
// counted in bailiff_tenant_budget_unlisted.
const MaxTenants = 64

// headroom reads the tenants' budgets when scraped.
type headroom struct {
	read                    func() ([]engine.Headroom, error)
	left, ceiling, unlisted *prometheus.Desc
	readable                *prometheus.Desc
}

func newHeadroom(read func() ([]engine.Headroom, error)) *headroom {
	labels := []string{"tenant", "window"}
	return &headroom{
		read:     read,
		left:     prometheus.NewDesc("bailiff_tenant_budget_headroom", "What a tenant may still spend in its current window: its ceiling less what every gateway sharing the counters saved as spent.", labels, nil),
		ceiling:  prometheus.NewDesc("bailiff_tenant_budget_ceiling", "A tenant's ceiling per window, from the policy.", labels, nil),
		unlisted: prometheus.NewDesc("bailiff_tenant_budget_unlisted", "Tenants with a budget whose headroom is not a series of its own (past the first 64 by name).", nil, nil),
		readable: prometheus.NewDesc("bailiff_tenant_budget_readable", "1 when the tenant counters could be read for this scrape, 0 when not (no headroom is shown then).", nil, nil),
	}
}

func (h *headroom) Describe(ch chan<- *prometheus.Desc) {
	ch <- h.left
	ch <- h.ceiling
	ch <- h.unlisted
	ch <- h.readable
}

func (h *headroom) Collect(ch chan<- prometheus.Metric) {
	rows, err := h.read()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(h.readable, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(h.readable, prometheus.GaugeValue, 1)
	listed := newBounded(MaxTenants)
	unlisted := 0
	for _, r := range rows { // sorted by tenant: the first 64 by name are listed
		if listed.value(r.Tenant) == Other {
			unlisted++
			continue
		}
		left := max(r.Ceiling-r.Spent, 0)
		ch <- prometheus.MustNewConstMetric(h.left, prometheus.GaugeValue, float64(left), r.Tenant, r.Window)
		ch <- prometheus.MustNewConstMetric(h.ceiling, prometheus.GaugeValue, float64(r.Ceiling), r.Tenant, r.Window)
	}
	ch <- prometheus.MustNewConstMetric(h.unlisted, prometheus.GaugeValue, float64(unlisted))
}
