package engine

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

var rateForm = regexp.MustCompile(`^([0-9]{1,9})/([a-z]+)$`)

var rateUnits = map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}

func compileRate(what, src, by, scope string, keys ...any) (*rateLimit, *compileErr) {
	at := func(k string) []any { return append(append([]any{}, keys...), k) }
	if src == "" {
		if by != "" {
			return nil, fail(fmt.Sprintf("%s: rate_by %q without a rate", what, by), at("rate_by")...)
		}
		return nil, nil
	}
	m := rateForm.FindStringSubmatch(src)
	if m == nil {
		return nil, fail(fmt.Sprintf("%s: rate %q is not a count per unit such as 10/m", what, src), at("rate")...)
	}
	per, ok := rateUnits[m[2]]
	if !ok {
		return nil, fail(fmt.Sprintf("%s: rate %q has unknown unit %q (known: s, m, h, d)", what, src, m[2]), at("rate")...)
	}
	n, _ := strconv.Atoi(m[1])
	if n < 1 || n > maxRate {
		return nil, fail(fmt.Sprintf("%s: rate %q must allow 1 to %d calls per unit (deny the tool with a rule instead of a rate of 0)", what, src, maxRate), at("rate")...)
	}
	r := &rateLimit{n: n, per: per, src: src, scope: scope}
	switch by {
	case "", "principal":
	case "tenant":
		r.byTenant = true
	default:
		return nil, fail(fmt.Sprintf("%s: rate_by must be principal or tenant, not %q", what, by), at("rate_by")...)
	}
	return r, nil
}

func compileCost(name string, cost *int) (int64, *compileErr) {
	switch {
	case cost == nil:
		return 1, nil
	case *cost < 0:
		return 0, fail(fmt.Sprintf("tool %q: cost must be 0 or more, not %d", name, *cost), "tools", name, "cost")
	case *cost > maxCost:
		return 0, fail(fmt.Sprintf("tool %q: cost %d is more than %d", name, *cost, maxCost), "tools", name, "cost")
	}
	return int64(*cost), nil
}

func compileTenants(specs map[string]*TenantSpec) (map[string]*tenantLimit, *compileErr) {
	if specs == nil {
		return nil, nil
	}
	if len(specs) == 0 {
		// It would refuse every call, and the canonical form, which
		// leaves an empty map out, would not: the log must hold the
		// policy that decided.
		return nil, fail("tenants names no tenant: name each with its ceiling, give \"*\" one for every tenant, or leave tenants out", "tenants")
	}
	out := map[string]*tenantLimit{}
	for _, name := range sortedKeys(specs) {
		ts := specs[name]
		if name == "" {
			return nil, fail("tenants: a tenant needs a name (\"*\" for every tenant not named)", "tenants", name)
		}
		if ts == nil || ts.Ceiling == nil {
			return nil, fail(fmt.Sprintf("tenant %q has no ceiling", name), "tenants", name)
		}
		if *ts.Ceiling < 0 || *ts.Ceiling > maxCeiling {
			return nil, fail(fmt.Sprintf("tenant %q: ceiling must be 0 to %d, not %d", name, int64(maxCeiling), *ts.Ceiling), "tenants", name, "ceiling")
		}
		w, ce := compileWindow(name, ts)
		if ce != nil {
			return nil, ce
		}
		out[name] = &tenantLimit{ceiling: *ts.Ceiling, window: w}
	}
	return out, nil
}

func compileWindow(name string, ts *TenantSpec) (window, *compileErr) {
	switch ts.Window {
	case "":
		return window{}, fail(fmt.Sprintf("tenant %q has no window (a duration such as 24h, or day or month)", name), "tenants", name)
	case "day", "month":
		zone := ts.Zone
		if zone == "" {
			zone = "UTC"
		}
		if zone == "Local" {
			// The machine's own zone would make the windows depend on
			// where the log is verified.
			return window{}, fail(fmt.Sprintf("tenant %q: zone must be an IANA name such as Europe/Berlin, not Local", name), "tenants", name, "zone")
		}
		loc, err := time.LoadLocation(zone)
		if err != nil {
			return window{}, fail(fmt.Sprintf("tenant %q: unknown time zone %q", name, zone), "tenants", name, "zone")
		}
		id := ts.Window + " " + loc.String()
		return window{month: ts.Window == "month", loc: loc, id: id, text: id}, nil
	}
	d, err := time.ParseDuration(ts.Window)
	switch {
	case err != nil:
		return window{}, fail(fmt.Sprintf("tenant %q: window %q is not a duration such as 24h, nor day or month", name, ts.Window), "tenants", name, "window")
	case d < minWindow || d > maxWindow || d%time.Second != 0:
		return window{}, fail(fmt.Sprintf("tenant %q: window %q must be whole seconds, from 1s to ten years", name, ts.Window), "tenants", name, "window")
	case ts.Zone != "":
		return window{}, fail(fmt.Sprintf("tenant %q: a zone applies to a day or month window, not to %q", name, ts.Window), "tenants", name, "zone")
	}
	return window{every: d, id: d.String(), text: ts.Window}, nil
}
