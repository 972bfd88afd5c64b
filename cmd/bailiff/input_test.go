package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSniffKnowsTheProjectsOwnFiles holds sniff to its promise: a file of
// a kind is never taken for another kind. Every fixture of a known kind
// must sniff as that kind or as unknown, and the plain ones as their kind.
func TestSniffKnowsTheProjectsOwnFiles(t *testing.T) {
	globs := []struct {
		pattern string
		kind    fileKind
		exact   bool // every match must be recognized, not only left unknown
	}{
		{"../../fixtures/chain/*.jsonl", kindLog, false},
		{"../../fixtures/chain/good_*.jsonl", kindLog, true},
		{"../../fixtures/traces/*/*.jsonl", kindTrace, true},
		{"../../fixtures/corpus/*.jsonl", kindTrace, true},
		{"../../fixtures/chain/src/*.jsonl", kindTrace, false},
		{"../../fixtures/policies/*.yaml", kindPolicy, true},
		{"../../engine/packs/*.yaml", kindPolicy, false},
		{"../../fixtures/mcp-tools/*.json", kindListing, true},
		{"../../fixtures/chain/src/*.key", kindPrivateKey, true},
		{"../../fixtures/chain/src/*.pub", kindPublicKey, true},
		{"../../fixtures/chain/*.ckpt", kindCheckpoint, true},
		{"../../fixtures/chain/src/labels.jsonl", kindLabels, true},
	}
	n := 0
	for _, g := range globs {
		files, err := filepath.Glob(g.pattern)
		if err != nil || len(files) == 0 {
			t.Fatalf("%s matches nothing", g.pattern)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > sniffSize {
				b = b[:sniffSize]
			}
			n++
			got := sniff(b)
			if got == g.kind || (!g.exact && got == kindUnknown) {
				continue
			}
			if g.pattern == "../../fixtures/chain/src/*.jsonl" && got == kindLabels {
				continue
			}
			t.Errorf("%s sniffs as %q, want %q", f, got, g.kind)
		}
	}
	t.Logf("%d files", n)
}

func TestSniffSigns(t *testing.T) {
	cases := []struct {
		in   string
		want fileKind
	}{
		// A log a crash zero-filled after its first record is still a log.
		{`{"v":1,"seq":0,"ts":"x","kind":"session"}` + "\n\x00\x00\x00", kindLog},
		// So is one whose first record was edited past its prefix (a
		// space, keys reordered): a session record holds "tools", and
		// must not be called a tools/list answer and kept from verify.
		{`{"v":1, "seq":0,"ts":"x","session":"s","kind":"session","tools":[{"name":"t"}]}`, kindLog},
		{`{"seq":0,"v":1,"ts":"x","session":"s","kind":"session","tools":[]}`, kindLog},
		{"\x00\x01\x02", kindBinary},
		{"caf\xe9\n", kindBinary},
		// A character cut by the sniff window is not binary.
		{"rules: []\nname: caf\xc3", kindPolicy},
		{`{"tools":[{"name":"x"}]}`, kindListing},
		{`{"version":1,"rules":[],"tools":{"x":{}}}`, kindPolicy},
		// A policy of contracts only is a policy, not a listing.
		{`{"version":1,"tools":{"send_email":{"exfiltrating":true}}}`, kindPolicy},
		{"{\n  \"version\": 1,\n  \"tools\": {\"x\": {}}\n}\n", kindPolicy},
		{"{\n  \"format\": \"x\",\n  \"seq\": 1,\n  \"record\": \"r\",\n  \"proof\": [],\n  \"checkpoint\": \"c\"\n}\n", kindProof},
		{"servers:\n  mail:\n    command: x\n", kindGatewayConfig},
		{`{"mcpServers":{}}`, kindClientConfig},
		{"audit.example/x+0123abcd+AbCd==\n", kindPublicKey},
		{"PRIVATE+KEY+audit.example/x+0123abcd+AbCd\n", kindPrivateKey},
		{"audit.example/x\n3\nroot\n\n— audit.example/x sig\n", kindCheckpoint},
		// Unknown stays unknown: the parser decides.
		{"hello\n", kindUnknown},
		{`{"call":{"id":"c1"},"extra":1}`, kindUnknown},
		{"- a\n- b\n", kindUnknown},
	}
	// A first record longer than the window (a session record with a
	// large policy and tool list) is still told by the keys before the cut.
	big := `{"v":1,"seq":0,"ts":"x","session":"s","kind":"session","tools":["` + strings.Repeat("t", 2*sniffSize) + `"]}`
	cases = append(cases, struct {
		in   string
		want fileKind
	}{big[:sniffSize], kindLog})
	bigTrace := `{"start":{"session":"s","tools":["` + strings.Repeat("t", 2*sniffSize) + `"]}}`
	cases = append(cases, struct {
		in   string
		want fileKind
	}{bigTrace[:sniffSize], kindTrace})
	for _, c := range cases {
		if got := sniff([]byte(c.in)); got != c.want {
			t.Errorf("sniff(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzSniff: no input stops sniff, and its answer is a pure function of
// the bytes it was given.
func FuzzSniff(f *testing.F) {
	for _, s := range []string{`{"v":1,"seq":0,"kind":"session"}`, "{\n\"tools\": [", "PRIVATE+KEY+", "rules:\n", "\xff\xfe", "a\n\n— b"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		k := sniff(b)
		if again := sniff(bytes.Clone(b)); again != k {
			t.Fatalf("sniff is not deterministic: %q then %q", k, again)
		}
		if k == kindBinary && bytes.IndexByte(b, 0) < 0 && validPrefix(b) {
			t.Fatalf("text sniffed as binary")
		}
	})
}

// TestCommandName: a launched server is named after its package, never
// after the directory it is given: a policy written for "filesystem"
// must not silently deny every call of a server named "ws".
func TestCommandName(t *testing.T) {
	for _, c := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/ws"}, "filesystem"},
		{[]string{"npx", "-y", "@modelcontextprotocol/server-filesystem@2025.1.14", "/srv"}, "filesystem"},
		{[]string{"uvx", "mcp-server-fetch"}, "fetch"},
		{[]string{"uvx", "--from", "mcp-server-git", "mcp-server-git", "--repository", "/r"}, "git"},
		{[]string{"npx", "mcp-mail-server"}, "mcp-mail-server"},
		{[]string{"npx", "-y", "@mcp-get-community/server-curl"}, "curl"},
		{[]string{"/usr/bin/node", "/opt/servers/weather.js", "--port", "3"}, "weather"},
		{[]string{"/usr/local/bin/my-server", "/data"}, "my-server"},
		{[]string{"npx"}, "npx"},
	} {
		if got := commandName(c.cmd); got != c.want {
			t.Errorf("commandName(%q) = %q, want %q", c.cmd, got, c.want)
		}
	}
}

// FuzzCommandName: any command line names its server without a panic,
// with a name that is neither empty nor a path: it becomes part of the
// default audit log's file name and is what rules select.
func FuzzCommandName(f *testing.F) {
	for _, s := range []string{"npx -y @modelcontextprotocol/server-filesystem /srv", "npx @scope/", "uvx --from", "node ./server-", "npx ..", "deno run -A x.ts"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		cmd := strings.Fields(line)
		if len(cmd) == 0 {
			return
		}
		name := commandName(cmd)
		if !usableName(name) {
			t.Errorf("commandName(%q) = %q", cmd, name)
		}
	})
}
