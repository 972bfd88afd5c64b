package engine

import (
	"reflect"
	"testing"
	"time"
)

const explainPolicy = `version: 1
rules:
  - id: fs-read
    server: "fs*"
    tool: read_file
    action: allow
  - id: big-mail
    tool: send_email
    action: ask
    when:
      - {arg: to, glob: "*@outside.example"}
  - id: admin-mail
    tool: send_email
    action: allow
    scopes: [mail.send]
  - id: any-deny
    tool: "rm*"
    action: deny
tools:
  send_email:
    max_calls: 3
    sink_params: [to]
`

func TestExplain(t *testing.T) {
	p, err := Load("test.yaml", []byte(explainPolicy))
	if err != nil {
		t.Fatal(err)
	}
	noScopes, err := p.Without(OffCheck(CheckScopes))
	if err != nil {
		t.Fatal(err)
	}
	noRule, err := p.Without(offRule("fs-read"))
	if err != nil {
		t.Fatal(err)
	}
	type rule struct {
		id   string
		v    Verdict
		cond bool
		off  bool
	}
	cases := []struct {
		name, server, tool string
		p                  *Policy
		rules              []rule
		dflt, names        bool
		budget             int // -1: no contract
	}{
		{"server glob matches", "fs1", "read_file", p, []rule{{"fs-read", Allow, false, false}}, false, true, -1},
		{"server glob does not match", "mail", "read_file", p, nil, true, false, -1},
		{"conditional then scoped", "mail", "send_email", p, []rule{{"big-mail", Ask, true, false}, {"admin-mail", Allow, true, false}}, true, true, 3},
		{"scopes off: scoped rule unconditional", "mail", "send_email", noScopes, []rule{{"big-mail", Ask, true, false}, {"admin-mail", Allow, false, false}}, false, true, 3},
		{"tool glob deny", "any", "rm_rf", p, []rule{{"any-deny", Deny, false, false}}, false, true, -1},
		{"disabled rule names nothing", "fs", "read_file", noRule, []rule{{"fs-read", Allow, false, true}}, true, false, -1},
		{"unknown tool", "fs", "write_file", p, nil, true, false, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := c.p.Explain(ToolRef{Server: c.server, Tool: c.tool})
			var got []rule
			for _, r := range e.Rules {
				got = append(got, rule{r.ID, r.Verdict, r.Conditional(), r.Disabled})
			}
			if !reflect.DeepEqual(got, c.rules) {
				t.Errorf("rules = %+v, want %+v", got, c.rules)
			}
			if e.DefaultApplies != c.dflt {
				t.Errorf("DefaultApplies = %v, want %v", e.DefaultApplies, c.dflt)
			}
			if e.NamesTool() != c.names {
				t.Errorf("NamesTool = %v, want %v", e.NamesTool(), c.names)
			}
			budget := -1
			if e.Contract != nil {
				budget = 0
				if e.Contract.MaxCalls != nil {
					budget = *e.Contract.MaxCalls
				}
			}
			if budget != c.budget {
				t.Errorf("budget = %d, want %d", budget, c.budget)
			}
		})
	}
}

// TestExplainAgreesWithDecide holds Explain to Decide: a tool Explain says
// no rule names is denied by default, and a rule it lists unconditionally
// first is the rule Decide reports.
func TestExplainAgreesWithDecide(t *testing.T) {
	p, err := Load("test.yaml", []byte(explainPolicy))
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range [][2]string{{"fs1", "read_file"}, {"mail", "read_file"}, {"x", "rm_rf"}, {"fs", "write_file"}} {
		e := p.Explain(ToolRef{Server: sc[0], Tool: sc[1]})
		s := NewState("s", sc[0], Principal{}, []ToolDef{{Name: sc[1], Digest: "d"}})
		d := Decide(p, s, &Call{ToolRef: ToolRef{Tool: sc[1]}, Args: map[string]any{}}, time.Unix(0, 0))
		want := defaultRuleID
		if len(e.Rules) > 0 && !e.Rules[0].Conditional() {
			want = e.Rules[0].ID
		}
		if d.Rule != want {
			t.Errorf("%s/%s: Decide rule %q, Explain says %q", sc[0], sc[1], d.Rule, want)
		}
	}
}

// TestExplainGate: Explain says when the sink gate applies as Decide
// applies it, for a tool's own contract, a glob's, and none.
func TestExplainGate(t *testing.T) {
	p := mustLoad(t, `version: 1
rules: []
tools:
  send: {exfiltrating: true}
  "fetch_*": {exfiltrating: false}
  post: {sink_params: [to]}
`)
	for tool, want := range map[string]Gate{"send": GateAlways, "fetch_url": GateNever, "post": GateShaped, "other": GateShaped} {
		if got := p.Explain(ToolRef{Server: "s", Tool: tool}).Gate; got != want {
			t.Errorf("%s: gate %q, want %q", tool, got, want)
		}
	}
}
