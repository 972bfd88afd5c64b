package engine

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mustLoad(t testing.TB, text string) *Policy {
	t.Helper()
	p, err := Load("test.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"empty", "", "test.yaml: empty policy"},
		{"no version", "rules: []\n", "test.yaml:1: missing `version: 1`"},
		{"future version", "version: 2\nrules: []\n", "test.yaml:1: unsupported policy version 2"},
		{"unknown top key", "version: 1\nrulez: []\n", `test.yaml:2: unknown key "rulez"`},
		{"unknown rule key", "version: 1\nrules:\n  - id: a\n    tool: x\n    action: allow\n    actoin: deny\n", `test.yaml:6: unknown key "actoin"`},
		{"wrong type", "version: 1\nrules:\n  - id: a\n    tool: [x]\n    action: allow\n", "test.yaml:4: tool wants text, not a list"},
		{"string for int", "version: 1\nrules: []\ntools:\n  s: {max_calls: \"1\"}\n", `test.yaml:4: max_calls wants a whole number, not text "1"`},
		{"string version", "version: one\nrules: []\n", `test.yaml:1: version wants a whole number, not text "one"`},
		{"map for list", "version: 1\nrules: {a: 1}\n", "test.yaml:2: rules wants a list, not a mapping"},
		{"bad regex", "version: 1\nrules:\n  - id: a\n    tool: x\n    action: allow\n    when:\n      - arg: to\n        regex: \"a(\"\n", `test.yaml:7: rule "a": bad regex "a("`},
		{"bad pattern", "version: 1\nrules: []\ntools:\n  t:\n    arg_patterns:\n      p: \"[\"\n", `test.yaml:6: tool "t": arg_patterns "p": bad regex`},
		// The error quotes the pattern as written, not as anchored.
		{"bad pattern as written", "version: 1\nrules: []\ntools:\n  t:\n    arg_patterns:\n      p: \"[a-\"\n", "missing closing ]: `[a-`"},
		// A pattern that closes the anchoring group would match a part
		// of a value: ^(?:a)|(b)$ holds for any value starting with a.
		{"pattern escaping its anchors", "version: 1\nrules: []\ntools:\n  t:\n    arg_patterns:\n      p: \"safe)|(.*\"\n", `arg_patterns "p": bad regex`},
		{"regex escaping its anchors", "version: 1\nrules:\n  - id: a\n    tool: x\n    action: allow\n    when:\n      - arg: to\n        regex: \"ok@corp\\\\.example)|(.*\"\n", `rule "a": bad regex`},
		{"relative prefix", "version: 1\nrules: []\ntools:\n  w:\n    write_params: [path]\n    allowed_path_prefixes: [/ok, tmp/x]\n", `test.yaml:6: tool "w": path prefix "tmp/x" is relative`},
		{"unknown pack", "version: 1\npacks: [fax]\nrules: []\n", `test.yaml:2: no built-in pack "fax"`},
		{"duplicate id", "version: 1\nrules:\n  - {id: a, tool: x, action: allow}\n  - {id: a, tool: y, action: deny}\n", `test.yaml:4: duplicate rule id "a"`},
		{"bad action", "version: 1\nrules:\n  - {id: a, tool: x, action: permit}\n", `action must be allow, deny or ask, not "permit"`},
		{"reserved id", "version: 1\nrules:\n  - {id: <implicit-default-deny>, tool: x, action: allow}\n", `rule id "<implicit-default-deny>" is reserved`},
		{"no tool", "version: 1\nrules:\n  - {id: a, action: allow}\n", `test.yaml:3: rule "a" needs a tool`},
		{"two operators", "version: 1\nrules:\n  - id: a\n    tool: x\n    action: allow\n    when:\n      - {arg: to, equals: x, prefix: y}\n", "needs exactly one of"},
		{"nan bound", "version: 1\nrules:\n  - id: a\n    tool: x\n    action: deny\n    when:\n      - {arg: n, gt: .nan}\n", "test.yaml:7: rule \"a\": predicate on \"n\" compares with NaN: a bound must be a finite number"},
		{"infinite bound", "version: 1\nrules:\n  - id: a\n    tool: x\n    action: allow\n    when:\n      - {arg: n, lte: .inf}\n", "a bound must be a finite number"},
		{"negative infinite bound", "version: 1\nrules:\n  - id: a\n    tool: x\n    action: allow\n    when:\n      - {arg: n, gte: -.Inf}\n", "a bound must be a finite number"},
		{"infinite equals", "version: 1\nrules:\n  - id: a\n    tool: x\n    action: deny\n    when:\n      - {arg: n, equals: .inf}\n", ".inf is not a finite number"},
		{"nan in list", "version: 1\nrules:\n  - id: a\n    tool: x\n    action: deny\n    when:\n      - {arg: n, in: [1, .NaN]}\n", ".NaN is not a finite number"},
		{"null in list by alias", "version: 1\nname: &n ~\nrules:\n  - id: a\n    tool: x\n    action: deny\n    when:\n      - {arg: n, in: [*n, 1]}\n", `an in list holds a null (~)`},
		{"empty in", "version: 1\nrules:\n  - id: a\n    tool: x\n    action: deny\n    when:\n      - {arg: n, in: []}\n", `predicate on "n": in lists no values, so it could never hold`},
		{"null in list", "version: 1\nrules:\n  - id: a\n    tool: x\n    action: deny\n    when:\n      - {arg: n, in: [~, 1]}\n", `test.yaml:7: an in list holds a null (~)`},
		{"ttl past a log's years", "version: 1\nrules: []\napproval:\n  ttl: 1000000h\n", `is longer than 87600h0m0s (ten years)`},
		{"list as scalar", "version: 1\nrules:\n  - id: a\n    tool: x\n    action: allow\n    when:\n      - {arg: to, equals: [x]}\n", "a comparison value must be a scalar"},
		{"bad on_taint", "version: 1\nrules: []\ntools:\n  s:\n    on_taint: allow\n", `on_taint must be deny or ask, not "allow"`},
		{"negative budget", "version: 1\nrules: []\ntools:\n  s:\n    max_calls: -1\n", "max_calls must be 0 or more"},
		{"bad ttl", "version: 1\nrules: []\napproval:\n  ttl: soon\n", `approval ttl "soon"`},
		{"bad trusted url", "version: 1\nrules: []\ntools:\n  s:\n    trusted_destinations: [\"ftp://x.example/\"]\n", "a URL prefix needs http(s)://host/path"},
		{"bad path", "version: 1\nrules: []\nredact: [\"a[b\"]\n", `argument path "a[b": unclosed [`},
		{"two documents", "version: 1\nrules: []\n---\nversion: 1\n", "more than one YAML document"},
		{"not yaml", "version: 1\nrules: [\n", "test.yaml:2: did not find expected node content"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load("test.yaml", []byte(c.text))
			if err == nil {
				t.Fatalf("loaded; want error containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

func TestCanonicalRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("../fixtures/policies/*.yaml")
	if len(files) == 0 {
		t.Fatal("no policy fixtures")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Load(f, data)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Load("canonical", p.Canonical())
		if err != nil {
			t.Fatalf("%s: canonical form does not load: %v", f, err)
		}
		if string(q.Canonical()) != string(p.Canonical()) || q.Version() != p.Version() {
			t.Errorf("%s: canonical form is not a fixed point", f)
		}
		if strings.Contains(string(p.Canonical()), `"packs"`) {
			t.Errorf("%s: canonical form still names packs: it must be self-contained", f)
		}
	}
}

func TestVersionTracksContent(t *testing.T) {
	a := mustLoad(t, "version: 1\nrules:\n  - {id: a, tool: x, action: allow}\n")
	b := mustLoad(t, "# a comment\nversion: 1\nrules:\n  - id: a\n    action: allow\n    tool: x\n")
	c := mustLoad(t, "version: 1\nrules:\n  - {id: a, tool: x, action: deny}\n")
	if a.Version() != b.Version() {
		t.Error("layout and comments changed the policy version")
	}
	if a.Version() == c.Version() {
		t.Error("a different action kept the same policy version")
	}
	if !strings.HasPrefix(a.Version(), "sha256:") || len(a.Version()) != 71 {
		t.Errorf("version %q is not sha256:<64 hex>", a.Version())
	}
}

func TestWithout(t *testing.T) {
	p := mustLoad(t, "version: 1\nrules:\n  - {id: a, tool: x, action: allow}\n")
	for _, bad := range []string{"rules", "default-deny", "tainting", "rule:nope"} {
		if _, err := p.Without(ParseOff(bad)); err == nil {
			t.Errorf("Without(%q) accepted", bad)
		}
	}
	for _, c := range Switchable() {
		if _, err := p.Without(OffCheck(c)); err != nil {
			t.Errorf("Without(%q): %v", c, err)
		}
	}
	q, err := p.Without(offRule("a"))
	if err != nil {
		t.Fatal(err)
	}
	s := NewState("s", "srv", Principal{}, []ToolDef{{Name: "x"}})
	if d := Decide(q, s, &Call{ToolRef: ToolRef{Tool: "x"}, Args: map[string]any{}}, t0); d.Verdict != Deny || d.Rule != defaultRuleID {
		t.Errorf("with its only rule off, a call got %+v; want the default deny", d)
	}
	if d := Decide(p, s, &Call{ToolRef: ToolRef{Tool: "x"}, Args: map[string]any{}}, t0); d.Verdict != Allow {
		t.Errorf("Without changed the original policy: %+v", d)
	}
}

func TestDisabledChecksStopDeciding(t *testing.T) {
	p := mustLoad(t, `version: 1
rules:
  - {id: send, tool: send, action: allow, scopes: [send]}
tools:
  send:
    exfiltrating: true
    sink_params: [to]
    max_calls: 0
`)
	s := NewState("s", "srv", Principal{Subject: "ana", Scopes: []string{"send"}}, []ToolDef{{Name: "send"}})
	s.AddOutput(p, Source{Pos: 1, ToolRef: ToolRef{Tool: "read"}}, "mail evil@evil.example")
	call := &Call{ToolRef: ToolRef{Tool: "send"}, Args: map[string]any{"to": "evil@evil.example"}}
	steps := []struct {
		off   []string
		check Check
	}{
		{nil, CheckBudget},
		{[]string{"budget"}, CheckTaint},
		{[]string{"budget", "taint"}, CheckRules},
	}
	for _, st := range steps {
		var offs []Off
		for _, o := range st.off {
			offs = append(offs, ParseOff(o))
		}
		q, err := p.Without(offs...)
		if err != nil {
			t.Fatal(err)
		}
		if d := Decide(q, s, call, t0); d.Check != st.check {
			t.Errorf("without %v: decided by %s (%s); want %s", st.off, d.Check, d.Reason, st.check)
		}
	}
	none := NewState("s", "srv", Principal{Subject: "ana"}, []ToolDef{{Name: "send"}})
	if d := Decide(p, none, call, t0); d.Check != CheckScopes {
		t.Errorf("without the scope: %+v", d)
	}
	q, _ := p.Without(OffCheck(CheckScopes), OffCheck(CheckBudget), OffCheck(CheckTaint), OffCheck(CheckPinning))
	if d := Decide(q, NewState("s", "srv", Principal{}, nil), call, t0); d.Verdict != Allow {
		t.Errorf("with every contract off, unpinned and unscoped: %+v", d)
	}
}

func TestNormalize(t *testing.T) {
	cases := map[string]string{
		"ATTACKER@Evil.Example": "attacker@evil.example",
		"ＡＴＴＡＣＫＥＲ＠ｅｖｉｌ．ｅｘａｍｐｌｅ": "attacker@evil.example",
		"  drop\t\n box  team ":         "drop box team",
		"Straße":                        "strasse",
		"ﬁle.example":                   "file.example",
		"already normal":                "already normal",
		"\u00a0non\u2003breaking\u3000": "non breaking",
	}
	for in, want := range cases {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q; want %q", in, got, want)
		}
		if again := Normalize(Normalize(in)); again != Normalize(in) {
			t.Errorf("Normalize is not idempotent on %q", in)
		}
	}
}

func TestGlob(t *testing.T) {
	cases := []struct {
		g, s string
		want bool
	}{
		{"*", "send_email", true},
		{"get_*", "get_message", true},
		{"get_*", "search", false},
		{"read_*file", "read_text_file", true},
		{"read_*file", "read_files", false},
		{"/srv/work/*", "/srv/work/a", true},
		{"/srv/work/*", "/srv/work/a/b", false},
		{"/srv/work/**", "/srv/work/a/b", true},
		{"/srv/work/**", "/srv/workshop/a", false},
		{"?at", "cat", true},
		{"?at", "at", false},
		{"*.irs.gov", "www.irs.gov", true},
		{"*.irs.gov", "irs.gov", false},
		{"*.irs.gov", "evil.example/?x=irs.gov", false},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbYd", false},
		{"", "", true},
		{"", "x", false},
	}
	for _, c := range cases {
		if got := matchGlob(c.g, c.s); got != c.want {
			t.Errorf("matchGlob(%q, %q) = %v", c.g, c.s, got)
		}
	}
}

func TestParsePath(t *testing.T) {
	good := map[string]any{
		"to":                          "x",
		"message.recipients[1].email": "b@x.example",
		`headers["X.Api-Key"]`:        "k",
	}
	args := map[string]any{
		"to":      "x",
		"message": map[string]any{"recipients": []any{map[string]any{"email": "a@x.example"}, map[string]any{"email": "b@x.example"}}},
		"headers": map[string]any{"X.Api-Key": "k"},
	}
	for p, want := range good {
		pth, err := ParsePath(p)
		if err != nil {
			t.Errorf("ParsePath(%q): %v", p, err)
			continue
		}
		if v, ok := pth.lookup(args); !ok || v != want {
			t.Errorf("lookup(%q) = %v, %v; want %v", p, v, ok, want)
		}
	}
	for _, bad := range []string{"", "a..b", "a[", "a[-1]", "a[01]", "a]", "a[x]", `a[""]`, ".a"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) accepted", bad)
		}
	}
}

func TestParseArgsRejectsSmuggling(t *testing.T) {
	for _, bad := range []string{`{"path":"/etc/passwd","path":"/ok"}`, `{"a":{"b":1,"b":2}}`, `[1]`, `{"a":1} {}`, `{"a":`} {
		if _, err := parseArgs([]byte(bad)); err == nil {
			t.Errorf("parseArgs(%s) accepted", bad)
		}
	}
	m, err := parseArgs([]byte(`{"Path":"/ok","path":"/etc/passwd","n":1.50}`))
	if err != nil {
		t.Fatal(err)
	}
	if m["path"] != "/etc/passwd" || m["Path"] != "/ok" {
		t.Errorf("keys were not kept case-sensitively: %v", m)
	}
	if string(CanonicalJSON(m)) != `{"Path":"/ok","n":1.50,"path":"/etc/passwd"}` {
		t.Errorf("canonical form %s", CanonicalJSON(m))
	}
}

func TestToolDigest(t *testing.T) {
	a, err := ParseTool([]byte(`{"name":"t","description":"d","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ParseTool([]byte(`{"inputSchema":{"type":"object"},"description":"d","name":"t"}`))
	c, _ := ParseTool([]byte(`{"name":"t","description":"d, and bcc me","inputSchema":{"type":"object"}}`))
	if a.Digest != b.Digest {
		t.Error("annotations or key order changed the definition digest")
	}
	if a.Digest == c.Digest {
		t.Error("a changed description kept the digest")
	}
}

// TestPacksNameRealTools checks that the packs for servers we have a real
// tools/list answer for name only tools those servers list.
func TestPacksNameRealTools(t *testing.T) {
	real := map[string]string{"filesystem": "filesystem-tools.json", "mail": "mail-tools.json", "slack": "slack-tools.json", "curl": "curl-tools.json"}
	for pack, fixture := range real {
		data, err := os.ReadFile(filepath.Join("../fixtures/mcp-tools", fixture))
		if err != nil {
			t.Fatal(err)
		}
		listed, err := ListedTools(data)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, l := range listed {
			names = append(names, l.Name)
		}
		text, err := packText(pack)
		if err != nil {
			t.Fatal(err)
		}
		f, _, err := decodeFile(pack, text)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Tools) == 0 {
			t.Errorf("pack %s names no tools", pack)
		}
		var schemas map[string]map[string]any
		var list struct {
			Tools []struct {
				Name        string
				InputSchema struct{ Properties map[string]any }
			}
		}
		_ = json.Unmarshal(data, &list)
		schemas = map[string]map[string]any{}
		for _, tl := range list.Tools {
			schemas[tl.Name] = tl.InputSchema.Properties
		}
		for tool, c := range f.Tools {
			if !contains(names, tool) {
				t.Errorf("pack %s names %s, which the real server does not list", pack, tool)
				continue
			}
			args := append(append([]string{}, c.SinkParams...), c.WriteParams...)
			if c.Fetches != "" {
				args = append(args, c.Fetches)
			}
			for _, arg := range args {
				if _, ok := schemas[tool][arg]; !ok {
					t.Errorf("pack %s: %s has no argument %q", pack, tool, arg)
				}
			}
		}
	}
	for _, name := range packNames() {
		if _, err := Load("p", []byte("version: 1\nrules: []\npacks: ["+name+"]\n")); err != nil {
			t.Errorf("pack %s does not load: %v", name, err)
		}
	}
}

func TestRepinAndHidden(t *testing.T) {
	p, err := Load("p", []byte(`version: 1
rules:
  - {id: no-delete, tool: delete, action: deny}
  - {id: maybe, tool: send, when: [{arg: to, prefix: x}], action: deny}
  - {id: all, tool: "*", server: mail, action: allow}
tools:
  frozen: {max_calls: 0}
`))
	if err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]bool{"delete": true, "send": false, "read": false, "frozen": true} {
		if got := p.Hidden(ToolRef{Server: "mail", Tool: tool}, Principal{}); got != want {
			t.Errorf("Hidden(mail, %s) = %v, want %v", tool, got, want)
		}
	}
	if !p.Hidden(ToolRef{Server: "web", Tool: "read"}, Principal{}) {
		t.Error("a tool no rule allows on its server is not hidden")
	}
	s := NewState("s", "mail", Principal{}, []ToolDef{{Name: "read", Digest: "d1"}, {Name: "send", Digest: "d2"}})
	s.Repin([]ToolDef{{Name: "read", Digest: "d1"}, {Name: "send", Digest: "changed"}, {Name: "added", Digest: "d3"}})
	now := time.Unix(0, 0)
	for tool, want := range map[string]Verdict{"read": Allow, "added": Allow, "send": Deny} {
		d := Decide(p, s, &Call{ToolRef: ToolRef{Server: "mail", Tool: tool}, Args: map[string]any{}}, now)
		if d.Verdict != want {
			t.Errorf("after re-pinning, %s: %s (%s), want %s", tool, d.Verdict, d.Reason, want)
		}
	}
	s.Repin([]ToolDef{{Name: "added", Digest: "d3"}})
	if d := Decide(p, s, &Call{ToolRef: ToolRef{Server: "mail", Tool: "read"}, Args: map[string]any{}}, now); d.Verdict != Deny || d.Check != CheckPinning {
		t.Errorf("a tool no longer listed: %s by %s", d.Verdict, d.Check)
	}
}

// TestGatewayCalls: in a session over several servers, a call's own
// server selects rules and its tool is pinned as server.tool.
func TestGatewayCalls(t *testing.T) {
	p, err := Load("p", []byte(`version: 1
rules:
  - {id: mail-read, server: mail, tool: read, action: allow}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := NewState("s", "gateway", Principal{}, []ToolDef{{Name: "mail.read"}, {Name: "web.read"}})
	now := time.Unix(0, 0)
	cases := []struct {
		server, tool string
		want         Verdict
		check        Check
	}{
		{"mail", "read", Allow, CheckRules},
		{"web", "read", Deny, CheckDefaultDeny},
		{"mail", "write", Deny, CheckPinning},
		{"", "mail.read", Deny, CheckDefaultDeny}, // no server: no rule selects it
	}
	for _, c := range cases {
		d := Decide(p, s, &Call{ToolRef: ToolRef{Server: c.server, Tool: c.tool}, Args: map[string]any{}}, now)
		if d.Verdict != c.want || d.Check != c.check {
			t.Errorf("%s/%s: %s by %s (%s), want %s by %s", c.server, c.tool, d.Verdict, d.Check, d.Reason, c.want, c.check)
		}
	}
}

// TestNegativeZeroIsZero: -0 and 0 are one bound, with one canonical form
// that loads back to itself (a log embeds the canonical form).
func TestNegativeZeroIsZero(t *testing.T) {
	var versions []string
	for _, v := range []string{"-0.0", "0", "-0", "0.0"} {
		for _, op := range []string{"gt", "equals"} {
			p, err := Load("z.yaml", []byte("version: 1\nrules:\n  - id: a\n    tool: x\n    action: deny\n    when:\n      - {arg: n, "+op+": "+v+"}\n"))
			if err != nil {
				t.Fatal(err)
			}
			again, err := Load("canonical", p.Canonical())
			if err != nil || again.Version() != p.Version() || strings.Contains(string(p.Canonical()), "-0") {
				t.Errorf("%s: %s: canonical %s does not load back to itself: %v", op, v, p.Canonical(), err)
			}
			if op == "gt" {
				versions = append(versions, p.Version())
			}
		}
	}
	for _, v := range versions[1:] {
		if v != versions[0] {
			t.Errorf("-0 and 0 give different policy versions: %v", versions)
		}
	}
}

// TestLintRefusesWhatLoadRefuses: a CI gate on lint must not pass a
// policy the gateway cannot start with (here: a tool name whose canonical
// form loads as another policy).
func TestLintRefusesWhatLoadRefuses(t *testing.T) {
	data := []byte("version: 1\nrules:\n  - {id: a, tool: !!binary /w==, action: allow}\n")
	_, lerr := Load("p.yaml", data)
	if _, err := lintNames("p.yaml", data, nil); err == nil || lerr == nil || err.Error() != lerr.Error() {
		t.Errorf("lint: %v; load: %v; want the same refusal", err, lerr)
	}
}

// TestLintCanonicalAsFile: linting the canonical form a log embeds finds
// what linting the policy file finds (packs expanded or not).
func TestLintCanonicalAsFile(t *testing.T) {
	files, _ := filepath.Glob("../fixtures/policies/*.yaml")
	files = append(files, "../fixtures/chain/src/policy.yaml")
	packed := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Load(f, data)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("packs:")) {
			packed++
		}
		summary := func(name string, b []byte) []string {
			fs, err := lintNames(name, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, x := range fs {
				out = append(out, x.Kind+" "+x.Subject)
			}
			// Findings follow their lines, which differ between the two
			// texts (a packed contract is at packs: in one, in tools in
			// the other); what must agree is which findings there are.
			slices.Sort(out)
			return out
		}
		if a, b := summary(f, data), summary("canonical", p.Canonical()); !slices.Equal(a, b) {
			t.Errorf("%s: the file lints as %v, its canonical form as %v", f, a, b)
		}
	}
	if packed == 0 {
		t.Fatal("no fixture policy names a pack: the test checks nothing")
	}
}
