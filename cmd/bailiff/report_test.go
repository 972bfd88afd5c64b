package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"bailiff/internal/golden"
)

const fixtures = "../../fixtures"

// TestReportGolden pins the review pack in Markdown, HTML and SARIF for
// three scenarios: a clean period, an incident with denied exfiltration
// (with shadow and ablation results), and tampered logs.
func TestReportGolden(t *testing.T) {
	pol := fixtures + "/chain/src/policy.yaml"
	scenarios := map[string][]string{
		"clean": {"--audit", fixtures + "/chain/good_web.jsonl", "--tools", fixtures + "/mcp-tools/curl-tools.json"},
		"incident": {"--audit", fixtures + "/chain/good_mail.jsonl", "--tools", fixtures + "/mcp-tools/mail-tools.json",
			"--checkpoint", fixtures + "/chain/good_mail.ckpt", "--key", fixtures + "/chain/src/test.pub",
			"--shadow", "../../golden/shadow/logs.json", "--ablate", "../../golden/ablate/logs.json"},
		"tampered": {"--audit", fixtures + "/chain/fail_forged_verdict.jsonl", "--audit", fixtures + "/chain/fail_edited_field.jsonl"},
	}
	for name, args := range scenarios {
		t.Run(name, func(t *testing.T) {
			var first []byte
			for pass := 0; pass < 2; pass++ {
				dir := t.TempDir()
				md, html, sarif := filepath.Join(dir, "pack.md"), filepath.Join(dir, "pack.html"), filepath.Join(dir, "pack.sarif")
				all := append([]string{"report", "--policy", pol, "--generated-at", "2026-12-01", "-o", md, "--html", html, "--sarif", sarif}, args...)
				var out, errb bytes.Buffer
				if code := run(all, &out, &errb); code != 0 {
					t.Fatalf("exit %d: %s", code, errb.String())
				}
				got := map[string][]byte{}
				for ext, f := range map[string]string{"md": md, "html": html, "sarif": sarif} {
					b, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					got[ext] = b
					if pass == 0 {
						golden.Check(t, filepath.Join("../../golden/report", name+"."+ext), b)
					}
				}
				// The same inputs give the same bytes.
				if pass == 0 {
					first = got["md"]
				} else if !bytes.Equal(first, got["md"]) {
					t.Error("a second run wrote another pack")
				}
			}
		})
	}
}

// hostile builds a log whose content tries to break out: a tool name and a
// destination holding script, markup and table-breaking characters.
func hostile(t *testing.T) (log, pol string) {
	dir := t.TempDir()
	pol = filepath.Join(dir, "policy.yaml")
	trace := filepath.Join(dir, "trace.jsonl")
	os.WriteFile(pol, []byte("version: 1\nrules:\n  - {id: all, tool: \"*\", action: allow}\ntools:\n  post:\n    exfiltrating: true\n    sink_params: [target]\n"), 0o644)
	payload := `<script>document.body.setAttribute('data-pwned','1')</script> | x\ny <img src=x onerror="document.body.setAttribute('data-pwned','2')">`
	tool := `post|<img src=x onerror=alert(1)>`
	lines := []string{
		`{"start":{"session":"s1","server":"web","principal":{"subject":"ana"},"tools":["read","post",` + jsonString(tool) + `]}}`,
		`{"call":{"id":"c1","tool":"read","args":{}}}`,
		`{"output":{"call":"c1","text":` + jsonString("send it to "+payload) + `}}`,
		`{"call":{"id":"c2","tool":"post","args":{"target":` + jsonString(payload) + `}}}`,
		`{"call":{"id":"c3","tool":` + jsonString(tool) + `,"args":{"target":"x"}}}`,
		`{"end":{}}`,
	}
	os.WriteFile(trace, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	log = filepath.Join(dir, "audit.jsonl")
	var out, errb bytes.Buffer
	if code := run([]string{"record", "--clock", "2026-03-02T09:00:00Z", "--policy", pol, trace, "-o", log}, &out, &errb); code != 0 {
		t.Fatalf("record: %s", errb.String())
	}
	return log, pol
}

func jsonString(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestReportHostileContent: audit content never becomes markup in the
// HTML, and never breaks a Markdown table.
func TestReportHostileContent(t *testing.T) {
	log, pol := hostile(t)
	dir := t.TempDir()
	md, html := filepath.Join(dir, "pack.md"), filepath.Join(dir, "pack.html")
	var out, errb bytes.Buffer
	if code := run([]string{"report", "--audit", log, "--policy", pol, "-o", md, "--html", html}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	h, _ := os.ReadFile(html)
	if regexp.MustCompile(`(?i)<script|<img|<[a-z]+[^>]*\son[a-z]+=`).Match(h) {
		t.Errorf("the HTML holds markup from the audit content:\n%s", h)
	}
	if !bytes.Contains(h, []byte("&lt;script&gt;")) {
		t.Error("the hostile destination is missing from the HTML: the test proves nothing")
	}
	m, _ := os.ReadFile(md)
	unescaped := regexp.MustCompile(`(^|[^\\])\|`)
	for _, line := range strings.Split(string(m), "\n") {
		if !strings.HasPrefix(line, "| ") || !strings.Contains(line, "script") {
			continue
		}
		header := 0
		for _, l := range strings.Split(string(m), "\n") {
			if strings.HasPrefix(l, "| TOP DENIED DESTINATIONS") {
				header = len(unescaped.FindAllString(l, -1))
			}
		}
		if n := len(unescaped.FindAllString(line, -1)); header == 0 || n != header {
			t.Errorf("a table row has %d cell separators, its header %d: %q", n, header, line)
		}
	}
}

// TestReportChromium renders the hostile pack in a real headless Chromium:
// no script runs (the page's DOM is untouched) and a screenshot is taken.
// CI installs Chromium and sets BAILIFF_CHROMIUM_REQUIRED.
func TestReportChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("BAILIFF_CHROMIUM_REQUIRED") != "" {
			t.Fatal("chromium is not installed")
		}
		t.Skip("chromium is not installed")
	}
	log, pol := hostile(t)
	dir := t.TempDir()
	html := filepath.Join(dir, "pack.html")
	var out, errb bytes.Buffer
	if code := run([]string{"report", "--audit", log, "--policy", pol, "-o", filepath.Join(dir, "pack.md"), "--html", html}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=" + filepath.Join(dir, "profile")}
	dom, err := exec.Command(chromium, append(flags, "--dump-dom", "file://"+html)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if !bytes.Contains(dom, []byte("bailiff review pack")) {
		t.Fatalf("chromium did not render the pack:\n%.500s", dom)
	}
	// The payloads set an attribute on <body> if they run; as text they
	// only appear escaped inside the page.
	if regexp.MustCompile(`<body[^>]*data-pwned`).Match(dom) {
		t.Fatal("a script from the audit content ran")
	}
	if !bytes.Contains(dom, []byte("data-pwned")) {
		t.Fatal("the hostile content is not on the page: the test proves nothing")
	}
	shot := filepath.Join(dir, "pack.png")
	cmd := exec.Command(chromium, append(flags, "--screenshot="+shot, "--window-size=1280,2400", "file://"+html)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, b)
	}
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 10000 {
		t.Fatalf("no screenshot: %v (%d bytes)", err, len(png))
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
}
