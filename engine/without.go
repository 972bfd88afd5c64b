package engine

import (
	"fmt"
	"strings"
)

// Off is one thing Without switches off: a check, or a single rule.
type Off struct {
	check  Check
	rule   string
	isRule bool
}

// OffCheck switches off check c (one of Switchable).
func OffCheck(c Check) Off { return Off{check: c} }

// offRule switches off the rule with id: calls it would match fall to the
// rules after it, and to the default.
func offRule(id string) Off { return Off{rule: id, isRule: true} }

// String is the Off as ParseOff reads it: the check's name, or
// "rule:<id>".
func (o Off) String() string {
	if o.isRule {
		return "rule:" + o.rule
	}
	return string(o.check)
}

// ParseOff reads a check name, or "rule:<id>", as the command line
// writes them.
func ParseOff(s string) Off {
	if id, ok := strings.CutPrefix(s, "rule:"); ok {
		return offRule(id)
	}
	return OffCheck(Check(s))
}

// Without returns a copy of p with the given checks and rules switched
// off. The rules and the default deny cannot be switched off: no setting
// makes an unmatched call allowed. A rule the policy does not have, or a
// check that is not switchable, is an error.
func (p *Policy) Without(offs ...Off) (*Policy, error) {
	q := *p
	q.disabledRules = map[string]bool{}
	for k, v := range p.disabledRules {
		q.disabledRules[k] = v
	}
	for _, o := range offs {
		if o.isRule {
			found := false
			for _, r := range p.rules {
				found = found || r.id == o.rule
			}
			if !found {
				return nil, fmt.Errorf("no rule %q in the policy", o.rule)
			}
			q.disabledRules[o.rule] = true
			continue
		}
		c := o.check
		switch c {
		case CheckRules, CheckDefaultDeny:
			return nil, fmt.Errorf("check %q cannot be switched off: it is the firewall (switch off single rules with rule:<id>)", c)
		}
		ok := false
		for _, s := range Switchable() {
			ok = ok || s == c
		}
		if !ok {
			return nil, fmt.Errorf("unknown check %q (known: %s, or rule:<id>)", c, checkList())
		}
		q.disabled |= checkBit(c)
	}
	return &q, nil
}

func checkList() string {
	var s []string
	for _, c := range Switchable() {
		s = append(s, string(c))
	}
	return strings.Join(s, ", ")
}
