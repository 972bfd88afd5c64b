package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/engine"
)

// Audit content is attacker-controlled: it must not reach a reviewer's
// terminal as control characters, or break a Markdown table.
func TestCellsAreInert(t *testing.T) {
	hostile := "ok\x1b[2J\nFORGED ROW|x\u202eevil\u0085`<b>`"
	var tb bytes.Buffer
	if err := writeTable(&tb, []string{"A", "B"}, [][]string{{hostile, ""}}); err != nil {
		t.Fatal(err)
	}
	out := tb.String()
	if strings.ContainsAny(out, "\x1b\u202e\u0085") || strings.Count(out, "\n") != 2 {
		t.Errorf("table leaks control characters or lines: %q", out)
	}
	if !strings.Contains(out, `ok\u001b[2J\nFORGED ROW`) {
		t.Errorf("table does not show the escaped text: %q", out)
	}
	var md bytes.Buffer
	if err := writeMarkdown(&md, []string{"A"}, [][]string{{hostile}}); err != nil {
		t.Fatal(err)
	}
	row := strings.Split(md.String(), "\n")[2]
	if strings.Count(row, "|")-strings.Count(row, `\|`) != 2 {
		t.Errorf("markdown row has extra cells: %q", row)
	}
	if strings.Contains(row, "<b>") || strings.Contains(row, "`") && !strings.Contains(row, "\\`") {
		t.Errorf("markdown row keeps live markup: %q", row)
	}
}

// Invisible characters are shown, so that two names that look one are
// not: zero-width spaces and joiners, marks, the BOM, tag characters.
func TestInvisibleShown(t *testing.T) {
	for _, name := range []string{"send\u200bemail", "send_email\u200e", "\ufeffsend_email", "send_email\U000E0041", "send\u00ademail", "send\u2060email"} {
		got := plain(name)
		for _, r := range got {
			if r > 0x7e {
				t.Errorf("plain(%q) = %q keeps an invisible character", name, got)
				break
			}
		}
		if got == "send_email" {
			t.Errorf("plain(%q) reads as send_email", name)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, ok := range []string{"table", "json", "markdown"} {
		if _, err := ParseFormat(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if _, err := ParseFormat("html"); err == nil {
		t.Error("html accepted")
	}
}

func TestControlsListNotDestinations(t *testing.T) {
	p, err := engine.Load("p.yaml", []byte("version: 1\nrules: []\ntools:\n  stage:\n    exfiltrating: true\n    sink_params: [url]\n    not_destinations: [data.contact_email, rows.channel]\n"))
	if err != nil {
		t.Fatal(err)
	}
	pk := &Pack{Policy: p, Summary: &audit.Summary{}}
	_, _, _, _, sink := pk.controls("stage")
	if !strings.Contains(sink, "not destinations: data.contact_email, rows.channel") {
		t.Errorf("stage's sink controls %q do not list its not_destinations", sink)
	}
}

// TestControlsPerServer: a server's own contract shows against that
// server, not folded into one contract for the tool's name.
func TestControlsPerServer(t *testing.T) {
	p, err := engine.Load("p.yaml", []byte(`version: 1
rules: []
tools:
  send: {exfiltrating: true, sink_params: [to], trusted_destinations: ["@corp.example"]}
servers:
  crm:
    send: {max_calls: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	sum := &audit.Summary{ToolServers: map[string]map[string]bool{"send": {"crm": true, "mail": true}}}
	pk := &Pack{Policy: p, Summary: sum}
	_, budget, _, _, sink := pk.controls("send")
	if budget != "on crm: 2; on mail: -" {
		t.Errorf("budget column %q", budget)
	}
	if want := "on crm: -; on mail: a sink: destinations in to and any argument named like one; trusted: @corp.example"; sink != want {
		t.Errorf("sink column %q, want %q", sink, want)
	}
	// A server section the logs never showed is still described.
	sum.ToolServers = map[string]map[string]bool{"send": {"mail": true}}
	if _, budget, _, _, _ := pk.controls("send"); budget != "on mail: -; on crm: 2" {
		t.Errorf("budget column with crm unseen: %q", budget)
	}
	sum.ToolServers = map[string]map[string]bool{}
	if _, budget, _, _, _ := pk.controls("send"); budget != "on other servers: -; on crm: 2" {
		t.Errorf("budget column with no server seen: %q", budget)
	}
	// No server section for the tool: one contract, no "on" prefix.
	if _, budget, _, _, _ := pk.controls("other"); budget != "-" {
		t.Errorf("an uncontracted tool's budget column %q", budget)
	}
}

// TestPackLintNamesGlobbedArguments: the pack lints with the listed
// tools' schemas, so what a not_destinations glob takes out is named, as
// policy lint names it; by name alone it would read "takes out no
// destination-shaped argument", which is false.
func TestPackLintNamesGlobbedArguments(t *testing.T) {
	pol, err := engine.Load("p.yaml", []byte("version: 1\nrules: [{id: all, tool: \"*\", action: allow}]\ntools:\n  submit_form: {exfiltrating: true, sink_params: [url], not_destinations: [\"data.**\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	listed, err := engine.ListedTools([]byte(`{"tools": [{"name": "submit_form", "inputSchema": {"type": "object", "properties": {
  "url": {"type": "string"}, "data": {"type": "object", "properties": {"contact_email": {"type": "string"}}}}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sum := audit.NewSummary(time.Time{}, time.Time{})
	sum.ByTool["send_email"] = map[string]int{"allow": 1} // called, never listed
	pk := &Pack{Policy: pol, Summary: sum, Annots: map[string][]string{}, Dests: map[string][]string{}}
	in := PackInput{PolicyName: "p.yaml", Given: pol, Tools: map[string][]engine.ListedTool{"t.json": listed}}
	_, toolList := pk.listTools(in)
	if err := pk.lint(in, "p.yaml", pol, toolList); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range pk.Findings {
		if f.Rule == "not-destinations-glob" {
			got = append(got, f.Message)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "takes out submit_form's data.contact_email") {
		t.Errorf("the pack's glob findings %q do not name data.contact_email", got)
	}
}

// TestPackShowsListingHints: a tools file's annotations and
// destination-shaped arguments reach the tools table, for a tool no
// session called as for one it did.
func TestPackShowsListingHints(t *testing.T) {
	p, err := engine.Load("p.yaml", []byte("version: 1\nrules: [{id: all, tool: \"*\", action: allow}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	pk := &Pack{Policy: p, Summary: audit.NewSummary(time.Time{}, time.Time{}), Annots: map[string][]string{}, Dests: map[string][]string{}}
	pk.listTools(PackInput{Tools: map[string][]engine.ListedTool{
		"a.json": {{Name: "send", Hints: []string{"openWorldHint"}, Dests: []string{"to"}}},
	}})
	var b mdWriter
	pk.mdTools(&b)
	out := b.String()
	for _, want := range []string{"| send |", "gated by its arguments to", "openWorldHint"} {
		if !strings.Contains(out, want) {
			t.Errorf("the tools table lacks %q:\n%s", want, out)
		}
	}
}

// TestPackListsListedTools: a tool a session listed but never called is
// a tool of the pack, with the values its schema fixes in its controls.
func TestPackListsListedTools(t *testing.T) {
	p, err := engine.Load("p.yaml", []byte("version: 1\nrules: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	sum := audit.NewSummary(time.Time{}, time.Time{})
	sum.ToolServers["lookup"] = map[string]bool{"crm": true}
	sum.Fixed["lookup"] = map[string]map[string][]string{"crm": {"channel": {"a", "b", "c", "d", "e"}, "data.notify": {"ops@corp.example"}}}
	pk := &Pack{Policy: p, Summary: sum}
	pk.listTools(PackInput{})
	if !slices.Contains(pk.ToolNames, "lookup") {
		t.Errorf("tools %v leave out the listed lookup", pk.ToolNames)
	}
	if _, _, _, _, sink := pk.controls("lookup"); sink != "where gated, values its schema fixes pass: channel = a | b | c | d | e, data.notify = ops@corp.example" {
		t.Errorf("lookup's sink column %q", sink)
	}
}

// TestPackServerTextInert: values a server's schema fixes reach the pack,
// and an entity or ~~ in them must stay text: decoded, &#x202E; would be
// a bidi override and &#124; a forged separator; ~~ would strike out the
// cells after it.
func TestPackServerTextInert(t *testing.T) {
	p, err := engine.Load("p.yaml", []byte("version: 1\nrules: []\ntools:\n  lookup: {max_calls: 1}\nservers:\n  b:\n    lookup: {max_calls: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	sum := audit.NewSummary(time.Time{}, time.Time{})
	sum.ToolServers["lookup"] = map[string]bool{"a": true, "b": true}
	sum.Fixed["lookup"] = map[string]map[string][]string{
		"a": {"to": {"x~~y", "&#x202E;moc.elpmaxe@sop", "&#124; FORGED"}},
		"b": {"to": {"z~~w"}},
	}
	pk := &Pack{Policy: p, Summary: sum}
	pk.listTools(PackInput{})
	html, err := pk.HTML()
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"\u202e", "<del>", "| FORGED"} {
		if strings.Contains(string(html), bad) {
			t.Errorf("the HTML pack holds %q from server text", bad)
		}
	}
	if !strings.Contains(string(html), "&amp;#x202E;moc.elpmaxe@sop") || !strings.Contains(string(html), "x~~y") {
		t.Errorf("the values are not shown as written")
	}
	// Server a's values are a's, not b's.
	if _, _, _, _, sink := pk.controls("lookup"); strings.Count(sink, "FORGED") != 1 || !strings.Contains(sink, "on b: ") {
		t.Errorf("sink column %q", sink)
	}
}

// TestControlsSayWhenTheGateApplies: the sink column says when the sink
// gate applies as the engine applies it. A contract naming sink_params
// with no exfiltrating flag is gated only when an argument looks like a
// destination, and the pack must not say it always is.
func TestControlsSayWhenTheGateApplies(t *testing.T) {
	p, err := engine.Load("p.yaml", []byte(`version: 1
rules: []
tools:
  always: {exfiltrating: true, sink_params: [to]}
  shaped: {sink_params: [to], trusted_destinations: ["@corp.example"]}
  never: {exfiltrating: false, sink_params: [to]}
  mail: {exfiltrating: true, sink_params: [to, cc]}
  form: {exfiltrating: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	// The engine checks bcc too, as every argument named like a
	// destination: the column must not read as "to and cc only".
	pk := &Pack{Policy: p, Summary: &audit.Summary{}, Dests: map[string][]string{"mail": {"bcc", "cc"}}}
	for tool, want := range map[string]string{
		"always": "a sink: destinations in to and any argument named like one; trusted: nothing",
		"shaped": "a sink when an argument looks like a destination: destinations in to and any argument named like one; trusted: @corp.example",
		"never":  "not a sink",
		"mail":   "a sink: destinations in to, cc and any argument named like one (bcc); trusted: nothing",
		"form":   "a sink: destinations in any argument named like one, or in every argument when none is; trusted: nothing",
	} {
		if _, _, _, _, sink := pk.controls(tool); sink != want {
			t.Errorf("%s: sink column %q, want %q", tool, sink, want)
		}
	}
}

// TestChartsDrawAnsweredAsks: a call held at an ask that a human
// answered out of band is drawn as answered, in its own colour, not as
// "asked, never answered": the charts say what the ask counts say.
func TestChartsDrawAnsweredAsks(t *testing.T) {
	sum := audit.NewSummary(time.Time{}, time.Time{})
	sum.ByTool["send"] = map[string]int{"allow": 1, audit.Answered: 2, "ask": 1}
	sum.Asks = map[string]int{"approved": 2, "unanswered": 1}
	pk := &Pack{Summary: sum}
	svg := pk.svg()
	if !strings.Contains(svg, "asked, answered out of band") {
		t.Errorf("the legend has no entry for asks answered out of band:\n%s", svg)
	}
	// Two of four calls answered: half the bar's 480 pixels, in the
	// answered colour; one never answered: a quarter, in the ask colour.
	for _, want := range []string{`width="240" height="18" fill="` + colors[audit.Answered] + `"`, `width="120" height="18" fill="` + colors["ask"] + `"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("no bar %s in:\n%s", want, svg)
		}
	}
	var b mdWriter
	pk.mdSummary(&b, false)
	if !strings.Contains(b.String(), "| send | 1     | 0    | 3   |") {
		t.Errorf("the tool table does not hold the three asked calls as ASK:\n%s", b.String())
	}
}

// TestPackNamesShadowCandidate: the pack's shadow section says which
// policy the result scored, and that its list of changed calls is
// partial when it is.
func TestPackNamesShadowCandidate(t *testing.T) {
	result := `{"type":"summary","calls":9,"counts":{"newly-allowed":3,"newly-asked":0,"newly-denied":2,"unchanged":4,"unevaluable":0},"candidate":{"file":"new.yaml","name":"tighter","version":"sha256:ab12"},"verified":true,"inputs":[]}
{"type":"example","category":"newly-allowed","file":"a.jsonl","session":"s","pos":3,"call":"c1","tool":"write_file","baseline":"deny by rules (r)","candidate":"allow by rules (w)","reason":"rule w: allow","args":{"path":"/srv/ws/secret/pwn.txt"},"redacted":["content"]}
{"type":"example","category":"newly-denied","file":"a.jsonl","session":"s","pos":5,"call":"c2","tool":"send","baseline":"allow by rules (s)","candidate":"deny by taint","reason":"tainted"}
`
	r, err := readShadow([]byte(result))
	if err != nil {
		t.Fatal(err)
	}
	pk := &Pack{Summary: audit.NewSummary(time.Time{}, time.Time{}), In: PackInput{shadow: r}}
	var b mdWriter
	pk.mdResults(&b)
	for _, want := range []string{"Candidate policy: new.yaml, named tighter, version sha256:ab12.", "2 of the 5 changed calls are shown below: the result lists at most its --examples",
		`{"path":"/srv/ws/secret/pwn.txt"} redacted: content`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the shadow section lacks %q:\n%s", want, b.String())
		}
	}

	// A result that lists every changed call, more than the pack shows:
	// the pack says it shows the first, and where the rest are.
	all := `{"type":"summary","calls":30,"counts":{"newly-allowed":25,"newly-asked":0,"newly-denied":0,"unchanged":5,"unevaluable":0},"verified":true,"inputs":[]}` + "\n"
	for i := range 25 {
		all += fmt.Sprintf(`{"type":"example","category":"newly-allowed","file":"a.jsonl","session":"s","pos":%d,"call":"c%d","tool":"write_file","baseline":"deny by rules (r)","candidate":"allow by rules (w)","reason":"rule w: allow","args":{"path":"/srv/f%d"}}`, i, i, i) + "\n"
	}
	if r, err = readShadow([]byte(all)); err != nil {
		t.Fatal(err)
	}
	pk.In.shadow = r
	b = mdWriter{}
	pk.mdResults(&b)
	for _, want := range []string{"20 of the 25 changed calls are shown below, the first by log and record; the shadow result lists every one", `/srv/f19`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the shadow section lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "/srv/f20") {
		t.Errorf("the pack shows more than %d changed calls", maxExamples)
	}
}
