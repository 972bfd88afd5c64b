package engine

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

const globPolicy = `version: 1
rules:
  - {id: all, tool: "*", action: allow}
tools:
  "stage_*": {exfiltrating: true, sink_params: [to], trusted_destinations: ["@corp.example"]}
  "stage_prod_*": {max_calls: 0}
  stage_prod_dry: {exfiltrating: false}
  send_email: {exfiltrating: true, sink_params: [to], trusted_destinations: ["@corp.example"]}
servers:
  crm:
    send_email: {exfiltrating: true, sink_params: [to], trusted_destinations: ["@crm.example"]}
    "stage_*": {max_calls: 0}
`

// gatewayCall decides one call in a gateway session, where each call
// names its server.
func gatewayCall(t *testing.T, p *Policy, server, tool, to string) Decision {
	t.Helper()
	s := NewState("s", "gateway", Principal{Subject: "ana"}, []ToolDef{{Name: server + "." + tool}})
	args := map[string]any{"to": to}
	return Decide(p, s, &Call{ID: "c1", ToolRef: ToolRef{Server: server, Tool: tool}, Args: args, Digest: ArgsDigest(args)}, t0)
}

func TestGlobContracts(t *testing.T) {
	p := mustLoad(t, globPolicy)
	cases := []struct {
		server, tool, to string
		verdict          Verdict
		check            Check
	}{
		// The glob's sink gate: a trusted address passes, another is asked.
		{"mail", "stage_email", "a@corp.example", Allow, CheckRules},
		{"mail", "stage_email", "x@evil.example", Ask, CheckTaint},
		// The more specific glob wins over stage_*, whatever the order.
		{"mail", "stage_prod_push", "a@corp.example", Deny, CheckBudget},
		// An exact name beats both globs.
		{"mail", "stage_prod_dry", "x@evil.example", Allow, CheckRules},
		// A glob matches the whole name, not a part of it: with no
		// contract, the trusted list of stage_* does not apply.
		{"mail", "prestage_email", "a@corp.example", Ask, CheckTaint},
		// The server's own section wins on that server, exact and glob.
		{"crm", "send_email", "a@crm.example", Allow, CheckRules},
		{"crm", "send_email", "a@corp.example", Ask, CheckTaint},
		{"mail", "send_email", "a@crm.example", Ask, CheckTaint},
		{"crm", "stage_email", "a@corp.example", Deny, CheckBudget},
		// A server section applies to its server only; the name of another
		// server that starts the same is not it.
		{"crm2", "stage_email", "a@corp.example", Allow, CheckRules},
	}
	for _, c := range cases {
		d := gatewayCall(t, p, c.server, c.tool, c.to)
		if d.Verdict != c.verdict || d.Check != c.check {
			t.Errorf("%s.%s to %s: %s by %s (%s), want %s by %s", c.server, c.tool, c.to, d.Verdict, d.Check, d.Reason, c.verdict, c.check)
		}
	}
	// A tool with an unrelated name has no contract: the fail-closed gate
	// still sees its destination-shaped argument.
	if d := gatewayCall(t, p, "mail", "other", "x@evil.example"); d.Verdict != Ask || d.Check != CheckTaint {
		t.Errorf("uncontracted tool: %s by %s", d.Verdict, d.Check)
	}
}

// TestServerSectionRunMode: a stdio session names its server once; its
// calls carry none, and the section of that server applies.
func TestServerSectionRunMode(t *testing.T) {
	p := mustLoad(t, globPolicy)
	s := NewState("s", "crm", Principal{Subject: "ana"}, []ToolDef{{Name: "send_email"}})
	args := map[string]any{"to": "a@crm.example"}
	if d := Decide(p, s, &Call{ID: "c1", ToolRef: ToolRef{Tool: "send_email"}, Args: args, Digest: ArgsDigest(args)}, t0); d.Verdict != Allow {
		t.Errorf("crm's own contract did not apply in its stdio session: %s by %s (%s)", d.Verdict, d.Check, d.Reason)
	}
}

func TestGlobContractLoadErrors(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"tie", `version: 1
rules: []
tools:
  "a*b": {max_calls: 1}
  "*ab": {max_calls: 2}
`, `test.yaml:4: contracts "*ab" and "a*b" both match tools such as "ab" and neither is more specific`},
		{"tie in a server", `version: 1
rules: []
servers:
  crm:
    "send_*": {max_calls: 1}
    "*_mail": {max_calls: 2}
`, `server crm: contracts "*_mail" and "send_*" both match tools such as "send_mail"`},
		{"server glob", `version: 1
rules: []
servers:
  "crm*":
    send: {max_calls: 1}
`, `test.yaml:5: servers: "crm*" is not a server name`},
		{"bad glob", `version: 1
rules: []
tools:
  "a***": {max_calls: 1}
`, `test.yaml:4: glob "a***"`},
		{"error inside a server section points there", `version: 1
rules: []
tools:
  send: {max_calls: 1}
servers:
  crm:
    send: {max_calls: -1}
`, `test.yaml:7: tool "send": max_calls must be 0 or more`},
		{"unknown list in a server section", `version: 1
rules: []
servers:
  crm:
    send: {trusted_destinations: ["list:nope"]}
`, `test.yaml:5: tool "send": "list:nope" names no list`},
	}
	for _, c := range cases {
		_, err := Load("test.yaml", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	// Globs of equal rank that cannot both match load.
	mustLoad(t, "version: 1\nrules: []\ntools:\n  \"read_*\": {max_calls: 1}\n  \"send_*\": {max_calls: 2}\n")
}

// TestServerSectionCanonical: the canonical form carries the server
// sections with their lists expanded, and loads as the same policy.
func TestServerSectionCanonical(t *testing.T) {
	p := mustLoad(t, `version: 1
rules: []
destinations:
  crm: ["@crm.example"]
servers:
  crm:
    send: {trusted_destinations: ["list:crm"]}
`)
	c := string(p.Canonical())
	if !strings.Contains(c, `"servers":{"crm":{"send":{"trusted_destinations":["@crm.example"]}}}`) {
		t.Errorf("canonical form: %s", c)
	}
	q := mustLoad(t, c)
	if q.Version() != p.Version() {
		t.Errorf("the canonical form loads as another policy")
	}
	// A policy without server sections keeps the canonical form it had.
	r := mustLoad(t, "version: 1\nrules: []\n")
	if got := string(r.Canonical()); got != `{"version":1,"rules":[]}` {
		t.Errorf("plain policy canonical: %s", got)
	}
}

func TestGlobWitness(t *testing.T) {
	cases := []struct {
		a, b string
		ok   bool
	}{
		{"stage_*", "stage_prod_*", true},
		{"stage_*", "*_email", true},
		{"read_*", "send_*", false},
		{"a?c", "ab?", true},
		{"a?", "abc", false},
		{"*x", "*y", false},
		{"a*", "*", true},
		{"a/*", "a*", true}, // in a name, '/' is a character like any other
		{"a?b", "a/b", true},
		{"é*", "?x", true},
		{"a**b", "*/b*", true}, // ** does: both match "a/b"
		{"**/x", "*/*/x", true},
		{"??_", "*??a*", false},
	}
	for _, c := range cases {
		w, ok := globWitness(c.a, c.b)
		if ok != c.ok {
			t.Errorf("%q and %q: overlap %v, want %v", c.a, c.b, ok, c.ok)
			continue
		}
		if ok && (!matchName(c.a, w) || !matchName(c.b, w)) {
			t.Errorf("%q and %q: witness %q matches not both", c.a, c.b, w)
		}
	}
}

// FuzzGlobWitness checks globWitness against the matcher itself: a
// witness must match both globs, and a name both match means there is
// one.
func FuzzGlobWitness(f *testing.F) {
	f.Add("stage_*", "*_email", "stage_email")
	f.Add("a?c", "*c", "abc")
	f.Add("**x", "?*", "yx")
	f.Fuzz(func(t *testing.T, a, b, name string) {
		if len(a) > 24 || len(b) > 24 || len(name) > 24 || !utf8.ValidString(a) || !utf8.ValidString(b) || !utf8.ValidString(name) || checkGlob(a) != nil || checkGlob(b) != nil {
			return
		}
		w, ok := globWitness(a, b)
		if ok && (!matchName(a, w) || !matchName(b, w)) {
			t.Fatalf("%q and %q: witness %q does not match both", a, b, w)
		}
		if !ok && matchName(a, name) && matchName(b, name) {
			t.Fatalf("%q and %q both match %q, but no witness was found", a, b, name)
		}
	})
}

func TestLintContractOverlaps(t *testing.T) {
	found, err := lintNames("p.yaml", []byte(globPolicy+`  mail:
    "*": {exfiltrating: false}
`), []string{"stage_email", "stage_prod_push", "stage_prod_dry", "send_email"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		if f.Kind == lintOverlap || f.Kind == lintLooseGlob {
			got = append(got, f.Kind+" "+f.Subject+": "+f.Message)
		}
	}
	want := []string{
		"contract-overlap stage_prod_*: glob stage_* does not apply to stage_prod_push: glob stage_prod_* does, which drops exfiltrating: true; sink_params to",
		"contract-overlap stage_prod_dry: glob stage_* does not apply to stage_prod_dry: contract stage_prod_dry does, which drops exfiltrating: true; sink_params to",
		"contract-overlap stage_prod_dry: glob stage_prod_* does not apply to stage_prod_dry: contract stage_prod_dry does, which drops the sink gate on destination-shaped arguments (exfiltrating: false); max_calls: 0",
		// crm's send_email keeps exfiltrating and sink_params: an override
		// that holds the tool to as much is not reported.
		"contract-overlap stage_*: the top-level glob stage_* does not apply to stage_email on server crm: crm's glob stage_* does, which drops exfiltrating: true; sink_params to",
		"glob-loosens *: on server mail, glob * sets exfiltrating: false, and a server chooses its tools' names: it can name a sending tool to match; name the tools exactly",
		"contract-overlap *: the top-level contract send_email does not apply to send_email on server mail: mail's glob * does, which drops exfiltrating: true; sink_params to",
		"contract-overlap *: the top-level glob stage_* does not apply to stage_email on server mail: mail's glob * does, which drops exfiltrating: true; sink_params to",
		"contract-overlap *: the top-level glob stage_prod_* does not apply to stage_prod_push on server mail: mail's glob * does, which drops the sink gate on destination-shaped arguments (exfiltrating: false); max_calls: 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lint found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLintOverlapWithoutListedTools: with no tools/list answers, the
// example is a name both keys match, and a glob not-destinations is a
// loosening glob too.
func TestLintOverlapWithoutListedTools(t *testing.T) {
	found, err := lintNames("p.yaml", []byte(`version: 1
rules: []
tools:
  "stage_*": {exfiltrating: true, sink_params: [url], not_destinations: [data]}
  "stage_prod_*": {max_calls: 3}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, f.Kind+": "+f.Message)
	}
	want := []string{
		"glob-loosens: glob stage_* takes data out of the sink gate (not_destinations), and a server chooses its tools' names: it can name a sending tool to match; name the tools exactly",
		"contract-overlap: glob stage_* does not apply to stage_prod_: glob stage_prod_* does, which drops exfiltrating: true; sink_params url",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lint found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestGlobCharacters: the matcher and the overlap check agree on what a
// character is and on what ** crosses, so the contract the engine picks
// is the one the loader ranked.
func TestGlobCharacters(t *testing.T) {
	cases := []struct {
		g, s string
		want bool
	}{
		{"*??a*", "𝔸a_", false}, // one character before the a, not two
		{"*??a*", "𝔸𝔸a_", true},
		{"?send", "📨send", true},
		{"*??send*", "📨send", false},
		{"**/*_email", "google/gmail/send_email", true},
		{"**/*_email", "gmail/send_email", true},
		{"**/*_email", "send_email", false},
		{"a/**/b", "a/x/y/b", true},
		{"a/*/b", "a/x/y/b", false},
	}
	for _, c := range cases {
		if got := matchGlob(c.g, c.s); got != c.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", c.g, c.s, got, c.want)
		}
	}
	p := mustLoad(t, "version: 1\nrules:\n  - {id: all, tool: \"**\", action: allow}\ntools:\n  \"*send*\": {max_calls: 0}\n  \"*??send*\": {exfiltrating: false}\n  \"**/*_email\": {max_calls: 0}\n")
	for _, tool := range []string{"📨send", "google/gmail/send_email"} {
		s := NewState("s", "srv", Principal{Subject: "ana"}, []ToolDef{{Name: tool}})
		args := map[string]any{"x": "y"}
		if d := Decide(p, s, &Call{ID: "c", ToolRef: ToolRef{Tool: tool}, Args: args, Digest: ArgsDigest(args)}, t0); d.Verdict != Deny || d.Check != CheckBudget {
			t.Errorf("%s: %s by %s (%s), want deny by budget", tool, d.Verdict, d.Check, d.Reason)
		}
	}
	// Both match a/b, with equal rank: a load error, not a choice by key
	// order.
	if _, err := Load("p.yaml", []byte("version: 1\nrules: []\ntools:\n  \"a**b\": {max_calls: 0}\n  \"*/b*\": {max_calls: 5}\n")); err == nil || !strings.Contains(err.Error(), "neither is more specific") {
		t.Errorf("a**b and */b*: %v", err)
	}
}

// FuzzMatchGlob checks the backtracking matcher against the automaton,
// which keeps every position a pattern could be at.
func FuzzMatchGlob(f *testing.F) {
	f.Add("*??a*", "𝔸a_")
	f.Add("stage_*", "stage_email")
	f.Add("a*b?c", "axxbyc")
	f.Fuzz(func(t *testing.T, g, s string) {
		if len(g) > 32 || len(s) > 64 || !utf8.ValidString(g) || !utf8.ValidString(s) || checkGlob(g) != nil {
			return
		}
		if got, want := matchGlob(g, s), matchTokens(globTokens(g), s); got != want {
			t.Fatalf("matchGlob(%q, %q) = %v, the automaton says %v", g, s, got, want)
		}
	})
}

// FuzzMatchName checks the name matcher (where '/' is ordinary) against
// the automaton, and the compiled fast paths against both.
func FuzzMatchName(f *testing.F) {
	f.Add("delete_*", "delete_all/force")
	f.Add("*??a*", "𝔸a_")
	f.Add("a?", "a\xff")
	f.Fuzz(func(t *testing.T, g, s string) {
		if len(g) > 32 || len(s) > 64 || checkGlob(g) != nil {
			return
		}
		want := runTokens(globTokens(g), s, true)
		if got := matchName(g, s); got != want {
			t.Fatalf("matchName(%q, %q) = %v, the automaton says %v", g, s, got, want)
		}
		if got := compileGlob(g).match(s); got != want {
			t.Fatalf("compiled %q on %q = %v, the automaton says %v", g, s, got, want)
		}
	})
}

// TestNamesHoldSlashes: MCP tool names may hold '/' (SEP-986), and a
// deny rule written with * covers them as an allow with ** would.
func TestNamesHoldSlashes(t *testing.T) {
	p := mustLoad(t, "version: 1\nrules:\n  - {id: no-delete, tool: \"delete_*\", action: deny}\n  - {id: rest, tool: \"**\", action: allow}\n")
	for _, name := range []string{"delete_all", "delete_all/force", "delete_/x/y"} {
		s := NewState("s", "srv", Principal{Subject: "ana"}, []ToolDef{{Name: name}})
		args := map[string]any{}
		if d := Decide(p, s, &Call{ID: "c1", ToolRef: ToolRef{Tool: name}, Args: args, Digest: ArgsDigest(args)}, t0); d.Verdict != Deny || d.Rule != "no-delete" {
			t.Errorf("%s: %s by %s (%s), want deny by no-delete", name, d.Verdict, d.Rule, d.Reason)
		}
	}
	if !matchName("*", "user-profile/update") || !compileGlob("user-*").match("user-profile/update") {
		t.Error("a star does not cover a '/' in a name")
	}
}

// TestLintOverrideLooser: an override is reported when it holds a tool
// to less than the contract it replaces, not only when it leaves a field
// out; and the same glob in a server's section replaces the top-level one.
func TestLintOverrideLooser(t *testing.T) {
	base := `version: 1
rules: []
tools:
  "stage_*": {exfiltrating: true, sink_params: [body], max_calls: 20, arg_patterns: {env: "dev|prod"}}
servers:
  crm:
    "stage_*": OVERRIDE
`
	cases := map[string]string{
		`{arg_patterns: {env: dev}}`: "exfiltrating: true; sink_params body; max_calls: 20; arg_patterns env: dev|prod",
		`{exfiltrating: true, sink_params: [body], max_calls: 1000, arg_patterns: {env: "dev|prod"}}`:              "max_calls: 20",
		`{exfiltrating: true, sink_params: [body], max_calls: 20, arg_patterns: {env: ".*"}}`:                      "arg_patterns env: dev|prod",
		`{exfiltrating: true, sink_params: [data], max_calls: 20, arg_patterns: {env: "dev|prod"}}`:                "sink_params body",
		`{exfiltrating: true, sink_params: [body], max_calls: 20, arg_patterns: {env: "dev|prod"}, on_taint: ask}`: "on_taint: deny",
		`{exfiltrating: true, sink_params: [body, data], max_calls: 5, arg_patterns: {env: "dev|prod", x: y}}`:     "",
	}
	for override, want := range cases {
		found, err := lintNames("p.yaml", []byte(strings.Replace(base, "OVERRIDE", override, 1)), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, f := range found {
			if f.Kind == lintOverlap {
				got = f.Message[strings.Index(f.Message, "which drops ")+len("which drops "):]
			}
		}
		if got != want {
			t.Errorf("override %s: lint says it drops %q, want %q", override, got, want)
		}
	}
}

// TestLintOverrideBehindAnother: the shortest name two globs share can
// belong to a third key; the override is still reported, and the finding
// says which controls it drops.
func TestLintOverrideBehindAnother(t *testing.T) {
	lint := func(text string) []string {
		t.Helper()
		found, err := lintNames("p.yaml", []byte(text), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range found {
			if f.Kind == lintOverlap {
				out = append(out, f.Message)
			}
		}
		return out
	}
	got := lint("version: 1\nrules: []\ntools:\n  \"*\": {max_calls: 1}\n  a: {max_calls: 1}\n  \"*a\": {}\n")
	if want := "glob * does not apply to some tools both match: glob *a does, which drops max_calls: 1"; !slices.Contains(got, want) {
		t.Errorf("findings %q, want %q among them", got, want)
	}
	// on_self_published: ask over a contract that denies them.
	got = lint("version: 1\nrules: []\ntools:\n  fetch: {exfiltrating: false, fetches: url}\n  \"send_*\": {exfiltrating: true, sink_params: [to], on_self_published: deny}\n  send_mail: {exfiltrating: true, sink_params: [to], on_self_published: ask}\n")
	if want := "glob send_* does not apply to send_mail: contract send_mail does, which drops on_self_published: deny"; !slices.Contains(got, want) {
		t.Errorf("findings %q, want %q among them", got, want)
	}
	// Naming a sink where none was named narrows the gate.
	got = lint("version: 1\nrules: []\ntools:\n  \"send_*\": {exfiltrating: true}\n  send_mail: {exfiltrating: true, sink_params: [note]}\n")
	if want := "glob send_* does not apply to send_mail: contract send_mail does, which drops the gate on every argument (no sink_params)"; !slices.Contains(got, want) {
		t.Errorf("findings %q, want %q among them", got, want)
	}
	// An exact server key the top-level glob never reaches is not blamed
	// on it.
	got = lint("version: 1\nrules: []\ntools:\n  \"*\": {max_calls: 1}\n  a: {max_calls: 1}\nservers:\n  crm:\n    a: {max_calls: 1}\n")
	if len(got) != 0 {
		t.Errorf("findings %q, want none", got)
	}
}
