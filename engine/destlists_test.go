package engine

import (
	"strings"
	"testing"
)

const listPolicy = `version: 1
rules:
  - {id: send, tool: send_email, action: allow}
  - {id: post, tool: http_post, action: allow}
destinations:
  carriers: ["domain:ups.com", "claims@fedex.com"]
tools:
  send_email:
    exfiltrating: true
    sink_params: [to]
    trusted_destinations: ["list:carriers", "@corp.example"]
  http_post:
    exfiltrating: true
    sink_params: [url]
    trusted_destinations: [LIST:carriers]
`

// TestDestinationLists: one named list serves every contract that names
// it, and the canonical form carries the entries, not the reference.
func TestDestinationLists(t *testing.T) {
	p := mustLoad(t, listPolicy)
	cases := []struct {
		tool, arg, value string
		trusted          bool
	}{
		{"send_email", "to", "claims@mail.ups.com", true},
		{"send_email", "to", "claims@fedex.com", true},
		{"send_email", "to", "ana@corp.example", true},
		{"send_email", "to", "other@fedex.com", false},
		{"http_post", "url", "https://www.ups.com/claims", true},
		{"http_post", "url", "https://ana@corp.example/", false},
		{"http_post", "url", "https://evil.example/list:carriers", false},
	}
	for _, c := range cases {
		args := map[string]any{c.arg: c.value}
		s := NewState("s", "desk", Principal{Subject: "ana"}, []ToolDef{{Name: "send_email"}, {Name: "http_post"}})
		d := Decide(p, s, &Call{Tool: c.tool, Args: args, Digest: ArgsDigest(args)}, t0)
		if got := d.Verdict == Allow; got != c.trusted {
			t.Errorf("%s %s=%q: %s (%s), want trusted=%v", c.tool, c.arg, c.value, d.Verdict, d.Reason, c.trusted)
		}
	}
	canon := string(p.Canonical())
	if strings.Contains(canon, "list:") || strings.Contains(canon, "destinations:\n") || strings.Count(canon, "domain:ups.com") != 2 {
		t.Errorf("canonical form does not carry the expanded lists:\n%s", canon)
	}
}

func TestDestinationListErrors(t *testing.T) {
	cases := map[string]string{
		"unknown list":    strings.Replace(listPolicy, `[LIST:carriers]`, `["list:carrier"]`, 1),
		"nested":          strings.Replace(listPolicy, `"claims@fedex.com"]`, `"list:carriers"]`, 1),
		"bad entry":       strings.Replace(listPolicy, `"domain:ups.com"`, `"domain:co.uk"`, 1),
		"empty":           strings.Replace(listPolicy, `["domain:ups.com", "claims@fedex.com"]`, `[]`, 1),
		"upper-case name": strings.Replace(listPolicy, "  carriers:", "  Carriers:", 1),
	}
	want := map[string]string{
		"unknown list":    `"list:carrier" names no list`,
		"nested":          "lists do not nest",
		"bad entry":       `destination list "carriers": trusted destination "domain:co.uk"`,
		"empty":           `destination list "carriers" is empty`,
		"upper-case name": "lower-case letters",
	}
	for name, text := range cases {
		_, err := Load("p.yaml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), want[name]) {
			t.Errorf("%s: err = %v, want %q", name, err, want[name])
		}
	}
	_, err := Load("p.yaml", []byte(cases["bad entry"]))
	if err == nil || !strings.HasPrefix(err.Error(), "p.yaml:6:") {
		t.Errorf("bad entry: %v, want it at line 6", err)
	}
}
