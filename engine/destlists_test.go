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
		d := decideOne(t, p, "", c.tool, c.arg, c.value)
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
	cases := []struct{ name, from, to, want string }{
		{"unknown list", `[LIST:carriers]`, `["list:carrier"]`, `"list:carrier" names no list`},
		{"nested", `"claims@fedex.com"]`, `"list:carriers"]`, "lists do not nest"},
		{"bad entry", `"domain:ups.com"`, `"domain:co.uk"`, `p.yaml:6: destination list "carriers": trusted destination "domain:co.uk"`},
		{"empty", `["domain:ups.com", "claims@fedex.com"]`, `[]`, `destination list "carriers" is empty`},
		{"upper-case name", "  carriers:", "  Carriers:", "lower-case letters"},
	}
	for _, c := range cases {
		_, err := Load("p.yaml", []byte(strings.Replace(listPolicy, c.from, c.to, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}
