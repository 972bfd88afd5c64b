package engine

import (
	"reflect"
	"strings"
	"testing"
)

func TestLintTiers(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       map[string]string // kind -> words in its message; nil for no finding
	}{
		{"clean", `first_party: [{tool: get_case}]
tools:
  get_case: {exfiltrating: false}
  web_search: {exfiltrating: false, lists: true}
  send: {exfiltrating: true, sink_params: [to], on_first_party: ask}`, nil},
		{"every tool", `first_party: [{tool: "*"}]
tools:
  send: {exfiltrating: true, sink_params: [to], on_first_party: ask}`, map[string]string{lintFirstPartyWide: "names every tool"}},
		{"a fetch tool", `first_party: [{tool: "fe*"}]
tools:
  fetch: {exfiltrating: false, fetches: url}
  send: {exfiltrating: true, sink_params: [to], on_first_party: ask, on_self_published: ask}`, map[string]string{lintFirstPartyWide: "takes in fetch, which fetches pages"}},
		{"a listing", `first_party: [{server: web, tool: search}]
servers:
  web:
    search: {exfiltrating: false, lists: true}
tools:
  send: {exfiltrating: true, sink_params: [to], on_first_party: ask}`, map[string]string{lintFirstPartyWide: "takes in search, which lists search results"}},
		{"a listing on another server", `first_party: [{server: crm, tool: search}]
servers:
  web:
    search: {exfiltrating: false, lists: true}
tools:
  send: {exfiltrating: true, sink_params: [to], on_first_party: ask}`, nil},
		{"no source", `tools:
  send: {exfiltrating: true, sink_params: [to], on_first_party: ask}`, map[string]string{lintFirstPartyUnused: "names no first_party source"}},
		{"trusted already", `trusted_sources: [{tool: "get_*"}]
first_party: [{tool: get_case}]
tools:
  send: {exfiltrating: true, sink_params: [to], on_first_party: ask}`, map[string]string{lintFirstPartyTrusted: "meets trusted_sources */get_*"}},
		{"a listing that fetches", `tools:
  browse: {exfiltrating: false, lists: true, fetches: url}
  send: {exfiltrating: true, sink_params: [to], on_self_published: ask}`, map[string]string{lintListingFetches: "browse lists search results and fetches pages"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := lintNames("p.yaml", []byte("version: 1\nrules: [{id: all, tool: \"*\", action: allow}]\n"+tc.text+"\n"), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, f := range fs {
				got[f.Kind] = f.Message
			}
			for kind, words := range tc.want {
				if !strings.Contains(got[kind], words) {
					t.Errorf("%s: got %q, want %q", kind, got[kind], words)
				}
			}
			for kind, msg := range got {
				if _, ok := tc.want[kind]; !ok {
					t.Errorf("unexpected %s: %s", kind, msg)
				}
			}
		})
	}
}

// An override that asks where the contract it hides denies a
// first-party destination is reported as dropping that control.
func TestLintOverrideDropsFirstParty(t *testing.T) {
	text := `version: 1
rules: [{id: all, tool: "*", action: allow}]
first_party: [{tool: get_case}]
tools:
  "send_*": {exfiltrating: true, sink_params: [to], on_first_party: deny}
  send_mail: {exfiltrating: true, sink_params: [to], on_first_party: ask}
`
	fs, err := lintNames("p.yaml", []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.Kind == lintOverlap && strings.Contains(f.Message, "on_first_party: deny") {
			return
		}
	}
	t.Fatalf("no overlap finding naming on_first_party: deny in %+v", fs)
}

// With the servers' tools, lint lists the destination-shaped arguments a
// not_destinations glob takes out of each, or says it takes out none.
func TestLintNotGlobs(t *testing.T) {
	listing := `{"tools": [
  {"name": "submit_form", "inputSchema": {"type": "object", "properties": {
    "url": {"type": "string"},
    "data": {"type": "object", "properties": {
      "contact_email": {"type": "string"}, "notes": {"type": "string"},
      "rows": {"type": "array", "items": {"type": "object", "properties": {"channel": {"type": "string"}}}}}}}}},
  {"name": "send_email", "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}, "data": {"type": "object", "properties": {"email": {"type": "string"}}}}}}
]}`
	listed, err := ListedTools([]byte(listing))
	if err != nil {
		t.Fatal(err)
	}
	policy := `version: 1
rules: [{id: all, tool: "*", action: allow}]
tools:
  submit_form: {exfiltrating: true, sink_params: [url], not_destinations: ["data.**", "**.phone_*", data.notes]}
`
	fs, err := lintListed("p.yaml", []byte(policy), listed)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		if f.Kind == lintNotGlob {
			got = append(got, f.Message)
		}
	}
	want := []string{
		`not_destinations "data.**" takes out submit_form's data.contact_email, data.rows[].channel: their values are never checked as destinations`,
		`not_destinations "**.phone_*" takes out no destination-shaped argument of the listed tools`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Without the tools, nothing to list.
	fs, err = lintNames("p.yaml", []byte(policy), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.Kind == lintNotGlob {
			t.Fatalf("a glob finding without tools: %s", f.Message)
		}
	}
}

// TestLintSeverity: a sink whose destinations go unchecked, and writes
// that are always denied, are high; the rest medium.
func TestLintSeverity(t *testing.T) {
	for kind, want := range map[string]Severity{lintNoSinkParams: SeverityHigh, lintWriteNoPrefixes: SeverityHigh,
		lintShadowed: SeverityMedium, lintNotGlob: SeverityMedium} {
		if got := (Finding{Kind: kind}).Severity(); got != want {
			t.Errorf("%s: %s, want %s", kind, got, want)
		}
	}
}

// TestListedToolHints: a listing gives each tool the annotations it sets
// true and its top-level destination-shaped arguments, as a reviewer is
// shown them; a hint set false, or not a boolean, is no hint, and a
// nested destination is not a top-level argument.
func TestListedToolHints(t *testing.T) {
	listing := `{"tools": [
  {"name": "send", "annotations": {"readOnlyHint": false, "openWorldHint": true, "destructiveHint": true, "title": "Send"},
   "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"},
     "meta": {"type": "object", "properties": {"url": {"type": "string"}}}}}},
  {"name": "plain", "annotations": "not an object", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}
]}`
	listed, err := ListedTools([]byte(listing))
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 {
		t.Fatalf("%d tools, want 2", len(listed))
	}
	if got, want := listed[0].Hints, []string{"destructiveHint", "openWorldHint"}; !reflect.DeepEqual(got, want) {
		t.Errorf("send's hints %q, want %q", got, want)
	}
	if got, want := listed[0].Dests, []string{"to"}; !reflect.DeepEqual(got, want) {
		t.Errorf("send's destinations %q, want %q", got, want)
	}
	if listed[1].Hints != nil || listed[1].Dests != nil {
		t.Errorf("plain has hints %q and destinations %q, want none", listed[1].Hints, listed[1].Dests)
	}
}
