package engine

import (
	"slices"
	"testing"
)

// A server is served when some allow or ask rule's server glob matches
// it; deny rules, and rules for other servers, serve nothing.
func TestServes(t *testing.T) {
	p := mustLoad(t, `version: 1
rules:
  - {id: fs, server: "file*", tool: "*", action: allow}
  - {id: mail-no, server: mail, tool: "*", action: deny}
  - {id: ask-notes, server: notes, tool: share, action: ask, when: [{arg: to, equals: x}]}
`)
	for server, want := range map[string]bool{
		"filesystem": true, "files": true, "fs": false, "mail": false, "notes": true, "": false,
	} {
		if got := p.Serves(server); got != want {
			t.Errorf("Serves(%q) = %v, want %v", server, got, want)
		}
	}
	if got, want := p.ServerGlobs(), []string{"file*", "notes"}; !slices.Equal(got, want) {
		t.Errorf("ServerGlobs() = %q, want %q", got, want)
	}
	any := mustLoad(t, "version: 1\nrules:\n  - {id: all, tool: read, action: allow}\n")
	if !any.Serves("whatever") || !slices.Equal(any.ServerGlobs(), []string{"*"}) {
		t.Errorf("a rule with no server serves every server: %v %q", any.Serves("whatever"), any.ServerGlobs())
	}
	none := mustLoad(t, "version: 1\nrules: []\n")
	if none.Serves("fs") || none.ServerGlobs() != nil {
		t.Errorf("a policy with no rules serves nothing")
	}
}

// Rules are read in order: an unconditional deny of every tool ends the
// search, and a rule that can never match serves nothing.
func TestServesInOrder(t *testing.T) {
	for name, c := range map[string]struct {
		policy string
		want   bool
	}{
		"deny all first":              {`[{id: no, server: mail, tool: "*", action: deny}, {id: yes, server: mail, tool: "*", action: allow}]`, false},
		"deny ** first":               {`[{id: no, tool: "**", action: deny}, {id: yes, server: mail, tool: send, action: allow}]`, false},
		"deny some first":             {`[{id: no, server: mail, tool: "del*", action: deny}, {id: yes, server: mail, tool: "*", action: allow}]`, true},
		"deny with a condition first": {`[{id: no, server: mail, tool: "*", action: deny, when: [{arg: to, equals: x}]}, {id: yes, server: mail, tool: "*", action: allow}]`, true},
		"deny for a scope first":      {`[{id: no, server: mail, tool: "*", action: deny, scopes: [intern]}, {id: yes, server: mail, tool: "*", action: allow}]`, true},
		"contradiction":               {`[{id: yes, server: mail, tool: "*", action: allow, when: [{arg: x, equals: a}, {arg: x, equals: b}]}]`, false},
	} {
		p := mustLoad(t, "version: 1\nrules: "+c.policy+"\n")
		if got := p.Serves("mail"); got != c.want {
			t.Errorf("%s: Serves(mail) = %v, want %v", name, got, c.want)
		}
	}
}
