package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bailiff/internal/golden"
)

// TestCallsGolden: the per-call view of a log with every kind of ask
// outcome (settled in band either way, answered out of band, never
// answered) and a redacted argument, in each format and under filters.
func TestCallsGolden(t *testing.T) {
	mail, web := fixtures+"/chain/good_mail.jsonl", fixtures+"/chain/good_web.jsonl"
	cases := map[string][]string{
		"mail.table":       {mail},
		"mail.md":          {"--format", "markdown", mail},
		"mail.json":        {"--format", "json", mail},
		"asked.table":      {"--verdict", "asked", mail},
		"denied-s1.table":  {"--verdict", "deny", "--session", "s1", mail},
		"approval.json":    {"--check", "approval", "--tool", "send_email", "--format", "json", mail},
		"window.table":     {"--since", "2026-11-03T09:01:00Z", "--until", "2026-11-03T10:06:00Z", mail},
		"day.table":        {"--since", "2026-11-03", "--until", "2026-11-04", web, mail},
		"two-logs.table":   {mail, web},
		"principal.table":  {"--principal", "ana", mail, web},
		"by-session.table": {"--by-session", web, mail},
		"redacted.json":    {"--format", "json", web},
		"nothing.markdown": {"--verdict", "answered", "--tool", "curl", "--format", "markdown", mail, web},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(append([]string{"calls"}, args...), nil, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			golden.Check(t, filepath.Join("../../golden/calls", name), bytes.ReplaceAll(out.Bytes(), []byte(fixtures), []byte("FIXTURES")))
		})
	}
}

// TestCallsRefuses: what calls will not list, and the flags it does not
// take, each with a clear error and nothing on standard output.
func TestCallsRefuses(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{fixtures + "/chain/fail_forged_verdict.jsonl"}, "fails verify: 1 finding, the first at seq"},
		{[]string{"--allow-unverified", fixtures + "/chain/fail_edited_web.jsonl"}, "fails integrity at seq"},
		{[]string{"--verdict", "denied", fixtures + "/chain/good_mail.jsonl"}, `--verdict "denied" is not a verdict (want allow, deny, ask, answered, asked)`},
		{[]string{"--check", "taints", fixtures + "/chain/good_mail.jsonl"}, `--check "taints" is not a check`},
		{[]string{"--since", "yesterday", fixtures + "/chain/good_mail.jsonl"}, `--since "yesterday" is not an RFC 3339 time or a date`},
		{[]string{"--verdict", "denied", fixtures + "/chain/good_mail.jsonl"}, "hint: did you mean --verdict deny?"},
		{[]string{"--tool", "send_*", fixtures + "/chain/good_mail.jsonl"}, `--tool "send_*" is a pattern: --tool takes a tool's exact name`},
		{[]string{"--since", "2026-11-04T00:00:00Z", "--until", "2026-11-03T00:00:00Z", fixtures + "/chain/good_mail.jsonl"}, "the range holds nothing"},
		{[]string{"--format", "yaml", fixtures + "/chain/good_mail.jsonl"}, `unknown format "yaml"`},
		{[]string{fixtures + "/traces/main/allow_approval_granted.jsonl"}, "is a trace, not an audit log"},
		{[]string{}, "bailiff calls needs at least 1 argument"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(append([]string{"calls"}, c.args...), nil, &out, &errb); code != exitUsage {
				t.Fatalf("exit %d, want %d: %s", code, exitUsage, errb.String())
			}
			if !strings.Contains(errb.String(), c.want) || out.Len() != 0 {
				t.Errorf("stderr %q does not say %q (stdout %q)", errb.String(), c.want, out.String())
			}
		})
	}
	// Told to, it lists a log that fails verify, and says so first.
	var out, errb bytes.Buffer
	if code := run([]string{"calls", "--allow-unverified", "--format", "markdown", fixtures + "/chain/fail_forged_verdict.jsonl"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "> **UNVERIFIED") {
		t.Errorf("an unverified listing does not say so:\n%s", out.String())
	}
}

// TestPackNamesCallsOfFindings: a finding about calls names them. The
// attacks an ablation saw get through are named by session and call,
// and the unanswered asks link to the calls the pack lists.
func TestPackNamesCallsOfFindings(t *testing.T) {
	dir := t.TempDir()
	md, html := filepath.Join(dir, "pack.md"), filepath.Join(dir, "pack.html")
	var out, errb bytes.Buffer
	if code := run([]string{"report", "--audit", fixtures + "/chain/good_mail.jsonl", "--ablate", "../../golden/ablate/through.json", "-o", md, "--html", html}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	b, _ := os.ReadFile(md)
	for _, want := range []string{
		"2 calls of 3 labelled attacks were not stopped by the policy: allowed, or asked and approved: session s1, call c3 (send\\_email, allow by rules (send-mail)); session s2, call d3 (archive\\_message, allow by approval (archive-asks))",
		"[The calls are listed below.](#calls-that-need-a-look)",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the pack lacks %q", want)
		}
	}
	h, _ := os.ReadFile(html)
	if !bytes.Contains(h, []byte(`<h2 id="calls-that-need-a-look">`)) || !bytes.Contains(h, []byte(`href="#calls-that-need-a-look"`)) {
		t.Errorf("the HTML pack does not link the finding to its calls")
	}
}

// -o writes Markdown whatever the file is called: a name that promises
// another format is refused, and nothing is written.
func TestReportOutputNameMatchesFormat(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"pack.html", "pack.HTM", "pack.sarif"} {
		out := filepath.Join(dir, name)
		var stdout, errb bytes.Buffer
		if code := run([]string{"report", "--audit", fixtures + "/chain/good_mail.jsonl", "-o", out}, nil, &stdout, &errb); code != exitUsage || !strings.Contains(errb.String(), "would hold Markdown") {
			t.Errorf("-o %s: exit %d: %s", name, code, errb.String())
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("-o %s was written", name)
		}
	}
}
