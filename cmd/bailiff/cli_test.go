package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestExitCodes pins the exit code contract: 0 ok, 1 a finding, 2 usage
// or I/O error, and errors on stderr only.
func TestExitCodes(t *testing.T) {
	const pol = "../../fixtures/policies/main.yaml"
	const trace = "../../fixtures/traces/main/deny_taint_exact_email.jsonl"
	cases := []struct {
		args []string
		code int
	}{
		{[]string{"demo", "--format", "markdown"}, 2},
		{[]string{"--help"}, 0},
		{[]string{"replay", "--policy", pol, trace}, 0},
		{[]string{"replay", "--policy", pol, "--format", "json", trace}, 0},
		{[]string{"policy", "lint", "../../fixtures/policies/ask-on-taint.yaml"}, 0},
		// The README's starting policy lints clean against the real server.
		{[]string{"policy", "lint", "../../fixtures/policies/starter-filesystem.yaml", "--tools", "../../fixtures/mcp-tools/filesystem-tools.json"}, 0},
		{[]string{"policy", "lint", pol, "--tools", "../../fixtures/mcp-tools/mail-tools.json"}, 1},
		{[]string{"replay", trace}, 2},
		{[]string{"replay", "--policy", pol}, 2},
		{[]string{"replay", "--policy", pol, "no-such-trace.jsonl"}, 2},
		{[]string{"replay", "--policy", trace, trace}, 2},
		{[]string{"replay", "--policy", pol, pol}, 2},
		{[]string{"replay", "--policy", pol, "--disable", "default-deny", trace}, 2},
		{[]string{"policy", "import", "--from", "mcp-bouncer", "no-such.yaml"}, 2},
		{[]string{"nonsense"}, 2},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(c.args, nil, &out, &errb)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, c.code, errb.String())
			}
			if code == 2 {
				if !strings.HasPrefix(errb.String(), "bailiff: error: ") {
					t.Errorf("stderr %q does not start with bailiff: error:", errb.String())
				}
				if out.Len() != 0 {
					t.Errorf("a failed command wrote to stdout: %q", out.String())
				}
			}
			first := strings.SplitN(errb.String(), "\n", 2)[0]
			if strings.HasSuffix(first, ".") {
				t.Errorf("error message ends with a period: %q", first)
			}
		})
	}
}

// TestEveryCommandHasExamples: every command's --help shows examples,
// cobra's help and completion (and completion's shells) included.
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if c.HasParent() && c.Example == "" {
			t.Errorf("%s has no examples", c.CommandPath())
		}
		n++
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot(nil, io.Discard, io.Discard))
	var out, errb bytes.Buffer
	if code := run([]string{"completion", "--help"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "Examples:") {
		t.Errorf("completion --help: exit %d, no examples:\n%s%s", code, out.String(), errb.String())
	}
	if n < 25 {
		t.Errorf("only %d commands walked", n)
	}
}
