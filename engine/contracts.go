package engine

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// contracts runs budget, tenant budget, rate, path, pattern and taint in
// that order on a call rule r let through. It returns an allow with an
// empty Check when no contract spoke.
func contracts(p *Policy, s *State, c *Call, r *rule, now time.Time, o *oracle) Decision {
	ct := p.contractFor(callRef(s, c))
	if used := s.used[callRef(s, c)]; p.on(CheckBudget) && ct.maxCalls >= 0 && used >= ct.maxCalls {
		reason := fmt.Sprintf("tool %q has used %d of its %d calls this session", c.Tool, used, ct.maxCalls)
		if ct.maxCalls == 0 {
			reason = fmt.Sprintf("max_calls is 0: tool %q is forbidden", c.Tool)
		}
		return Decision{Verdict: Deny, Check: CheckBudget, Reason: reason}
	}
	if p.limits {
		if d, bad := limits(p, s, c, ct, r, now); bad {
			return d
		}
	}
	if p.on(CheckPath) {
		if d, bad := confine(ct, c, o); bad {
			return d
		}
	}
	if p.on(CheckPattern) {
		if d, bad := patterns(ct, c, o); bad {
			return d
		}
	}
	if p.on(CheckTaint) && gated(ct, c) {
		return sinkGate(p, s, ct, c, o)
	}
	return Decision{Verdict: Allow}
}

// valueAt returns the value at pth, or unknown when it was redacted.
func valueAt(c *Call, pth Path) (v any, present, unknownValue bool) {
	for _, r := range c.Redacted {
		if covers, inside := overlap(r, pth); covers || inside {
			return nil, true, true
		}
	}
	v, ok := pth.lookup(c.Args)
	return v, ok, false
}

func confine(ct *contract, c *Call, o *oracle) (Decision, bool) {
	for _, w := range ct.writes {
		v, present, unk := valueAt(c, w)
		if !present {
			continue
		}
		if unk {
			if o.choose(2, w.raw, CheckPath) == 0 {
				continue
			}
			return Decision{Verdict: Deny, Check: CheckPath, Reason: fmt.Sprintf("%s is redacted", w.raw)}, true
		}
		vals, ok := stringsOf(v)
		if !ok {
			return Decision{Verdict: Deny, Check: CheckPath, Reason: fmt.Sprintf("%s is not a path string", w.raw)}, true
		}
		for _, s := range vals {
			if reason := outside(s, ct.prefixes); reason != "" {
				return Decision{Verdict: Deny, Check: CheckPath, Reason: fmt.Sprintf("%s %q %s", w.raw, s, reason)}, true
			}
		}
	}
	return Decision{}, false
}

// outside explains why a path is not under any prefix, or returns "".
func outside(p string, prefixes []string) string {
	if len(prefixes) == 0 {
		return "cannot be written: the policy allows no path prefixes for this tool"
	}
	if !strings.HasPrefix(p, "/") {
		return "is relative: only absolute paths can be confined"
	}
	clean := path.Clean(p)
	for _, pre := range prefixes {
		if clean == pre || pre == "/" || strings.HasPrefix(clean, pre+"/") {
			return ""
		}
	}
	return fmt.Sprintf("is outside the allowed prefixes (cleaned: %q)", clean)
}

// stringsOf returns a string or a list of strings; anything else fails.
func stringsOf(v any) ([]string, bool) {
	switch v := v.(type) {
	case string:
		return []string{v}, true
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

func patterns(ct *contract, c *Call, o *oracle) (Decision, bool) {
	for _, ap := range ct.patterns {
		v, present, unk := valueAt(c, ap.path)
		if !present {
			continue
		}
		if unk {
			if o.choose(2, ap.path.raw, CheckPattern) == 0 {
				continue
			}
			return Decision{Verdict: Deny, Check: CheckPattern, Reason: fmt.Sprintf("%s is redacted", ap.path.raw)}, true
		}
		var vals []string
		switch v := v.(type) {
		case map[string]any:
			return Decision{Verdict: Deny, Check: CheckPattern, Reason: fmt.Sprintf("%s is an object, not a value to match", ap.path.raw)}, true
		case []any:
			for _, e := range v {
				s, ok := scalarText(e)
				if !ok {
					return Decision{Verdict: Deny, Check: CheckPattern, Reason: fmt.Sprintf("%s holds a non-scalar", ap.path.raw)}, true
				}
				vals = append(vals, s)
			}
		default:
			s, _ := scalarText(v)
			vals = []string{s}
		}
		for _, s := range vals {
			if !ap.re.MatchString(s) {
				return Decision{Verdict: Deny, Check: CheckPattern, Reason: fmt.Sprintf("%s %q does not match %q", ap.path.raw, s, ap.src)}, true
			}
		}
	}
	return Decision{}, false
}

func scalarText(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case nil:
		return "null", true
	case bool:
		if v {
			return "true", true
		}
		return "false", true
	default:
		if f, ok := v.(fmt.Stringer); ok {
			return f.String(), true
		}
	}
	return "", false
}

// noContract is what a tool without a contract gets: no budget, no path or
// pattern constraints, and the fail-closed sink gate when its arguments look
// like destinations.
var noContract = &contract{spec: &Contract{}, maxCalls: -1, cost: 1, onTaint: Deny, onSelf: Deny}
