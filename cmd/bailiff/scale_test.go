package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
)

// scalePolicy denies the danger_ tools, asks for the ask_ tools, and
// allows the rest.
const scalePolicy = `version: 1
name: scale
rules:
  - {id: no-danger, tool: "danger_*", action: deny, reason: "danger tools are never delegated"}
  - {id: ask-first, tool: "ask_*", action: ask, reason: "a human decides"}
  - {id: rest, tool: "*", action: allow}
`

// writeScaleLog writes a log shaped like a real agent fleet's: 215
// sessions, 1,364 calls over 491 distinct tools, most called once; 27
// calls denied and 20 asks no one answered. It returns the log's path.
func writeScaleLog(t testing.TB, dir string) string {
	t.Helper()
	pol, err := engine.Load("scale.yaml", []byte(scalePolicy))
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for i := range 9 {
		for range 3 {
			calls = append(calls, fmt.Sprintf("danger_%02d", i))
		}
	}
	for i := range 10 {
		for range 2 {
			calls = append(calls, fmt.Sprintf("ask_%02d", i))
		}
	}
	for i := range 453 {
		calls = append(calls, fmt.Sprintf("workspace_%02d__list_or_update_record_%03d", i%17, i))
	}
	for len(calls) < 1364 {
		calls = append(calls, fmt.Sprintf("busy_%02d", len(calls)%19))
	}
	// A fixed shuffle: the same log every run.
	for i := range calls {
		j := (i*7919 + 13) % len(calls)
		calls[i], calls[j] = calls[j], calls[i]
	}
	name := filepath.Join(dir, "fleet.jsonl")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec := &audit.Recorder{Policy: pol, Log: chain.NewWriter(f, chain.None), Evidence: chain.OpenEvidence(chain.EvidenceDir(name))}
	start := time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)
	const sessions = 215
	for s := range sessions {
		id := fmt.Sprintf("agent-%03d", s)
		var mine []string
		for i := s; i < len(calls); i += sessions {
			mine = append(mine, calls[i])
		}
		seen := map[string]bool{}
		var tools []engine.ToolDef
		for _, c := range mine {
			if !seen[c] {
				seen[c] = true
				tools = append(tools, engine.ToolDef{Name: c})
			}
		}
		events := []replay.Event{{Start: &replay.Start{Session: id, Server: "fleet", Principal: engine.Principal{Subject: "ana"}, Tools: tools}}}
		for i, c := range mine {
			cid := fmt.Sprintf("c%d", i)
			events = append(events, replay.Event{Call: &replay.Call{ID: cid, Tool: c, Args: map[string]any{"n": i}}},
				replay.Event{Output: &replay.Output{Call: cid, Text: "done", Evidence: engine.OutputJSON("done", nil, nil)}})
		}
		events = append(events, replay.Event{End: true})
		for i := range events {
			events[i].Line = i + 1
			events[i].At = start.Add(time.Duration(s)*20*time.Minute + time.Duration(i)*time.Second)
		}
		if err := rec.Record(id, events); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// TestPackAtScale: the pack of a real fleet's log (491 tools, most called
// once) stays readable: under 100 KB of Markdown, its first screen with
// the status, the counts, the findings and the calls that need a look.
func TestPackAtScale(t *testing.T) {
	dir := t.TempDir()
	log := writeScaleLog(t, dir)
	md := filepath.Join(dir, "pack.md")
	var out, errb bytes.Buffer
	if code := run([]string{"report", "--audit", log, "-o", md, "--html", filepath.Join(dir, "pack.html")}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pack: %d bytes", len(b))
	if d := os.Getenv("BAILIFF_SCALE_OUT"); d != "" {
		// To look at the pack by hand.
		h, _ := os.ReadFile(filepath.Join(dir, "pack.html"))
		os.WriteFile(filepath.Join(d, "pack.md"), b, 0o644)
		os.WriteFile(filepath.Join(d, "pack.html"), h, 0o644)
	}
	if len(b) > 100_000 {
		t.Errorf("the pack of a 491-tool log is %d bytes of Markdown, over 100 KB", len(b))
	}
	pack := string(b)
	first, _, ok := strings.Cut(pack, "## Audit summary")
	if !ok {
		t.Fatalf("no audit summary:\n%s", pack)
	}
	// The first screen: the answer, the counts, the findings, and the
	// calls that need a look, with the command that lists them all.
	for _, want := range []string{"**Status: FINDINGS.**", "- Calls: 1364 in 215 sessions: 1317 allowed, 27 denied, 20 held at an ask",
		"unanswered-ask", "47 calls denied or asked and never answered, in log order. The first 10 are below; bailiff calls --verdict deny --verdict ask",
		"| danger\\_03 | deny             |", "ask (unanswered)"} {
		if !strings.Contains(first, want) {
			t.Errorf("the first screen lacks %q:\n%s", want, first)
		}
	}
	if n := strings.Count(first, "\n| agent-"); n != 10 {
		t.Errorf("the first screen lists %d calls, want 10", n)
	}
	// The charts and tables name the tools that matter and fold the rest.
	for _, want := range []string{"(471 more tools)", "## Appendix: the other tools", "471 more tools have no contract"} {
		if !strings.Contains(pack, want) {
			t.Errorf("the pack lacks %q", want)
		}
	}
	for _, tool := range []string{"danger\\_00", "ask\\_09", "busy\\_"} {
		if !strings.Contains(first+strings.Split(pack, "## Scope")[0], "| "+tool) {
			t.Errorf("the summary does not name %s", tool)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "pack.html"))
	if err != nil {
		t.Fatal(err)
	}
	if bars := strings.Count(string(html), `font-size="12">`); bars > 21+4+80 {
		t.Errorf("the HTML charts draw %d labels: the tools are not folded", bars)
	}
}

// TestTimelineOneSecond: a log whose calls all fall in one second draws
// one column, not a block the width of the page, and says why.
func TestTimelineOneSecond(t *testing.T) {
	dir := t.TempDir()
	pol, err := engine.Load("p.yaml", []byte("version: 1\nrules: [{id: all, tool: \"*\", action: allow}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "burst.jsonl")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	rec := &audit.Recorder{Policy: pol, Log: chain.NewWriter(f, chain.None), Evidence: chain.OpenEvidence(chain.EvidenceDir(name))}
	events := []replay.Event{{Start: &replay.Start{Session: "s", Server: "x", Principal: engine.Principal{Subject: "ana"}, Tools: []engine.ToolDef{{Name: "read"}}}}}
	for i := range 5 {
		events = append(events, replay.Event{Call: &replay.Call{ID: fmt.Sprint("c", i), Tool: "read", Args: map[string]any{}}})
	}
	events = append(events, replay.Event{End: true})
	at := time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)
	for i := range events {
		events[i].Line, events[i].At = i+1, at.Add(time.Duration(i)*time.Millisecond)
	}
	if err := rec.Record("s", events); err != nil {
		t.Fatal(err)
	}
	f.Close()
	html := filepath.Join(dir, "pack.html")
	var out, errb bytes.Buffer
	if code := run([]string{"report", "--audit", name, "-o", filepath.Join(dir, "pack.md"), "--html", html}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	b, _ := os.ReadFile(html)
	svg := string(b)[strings.Index(string(b), `aria-label="Verdicts over time"`):]
	svg = svg[:strings.Index(svg, "</svg>")]
	if !strings.Contains(svg, "Verdicts: every call in one second (5 calls)") {
		t.Errorf("the timeline does not say every call is in one second:\n%s", svg)
	}
	for _, m := range regexp.MustCompile(`<rect x="\d+" y="\d+" width="(\d+)" height="\d+"`).FindAllStringSubmatch(svg, -1) {
		if w, _ := strconv.Atoi(m[1]); w > 40 {
			t.Errorf("a column %d wide: one second drawn as a block\n%s", w, svg)
		}
	}
}

// TestPackFirstScreenInChromium renders the pack of the fleet's log in a
// real headless Chromium, 1280 by 1000 pixels, and measures where its
// parts land: the status, the counts, the findings and the calls that
// need a look all end within the first screen, before the charts. The
// pack itself runs no script (its CSP forbids it); a test page around it
// measures it, and a screenshot of the first screen is kept in the run.
func TestPackFirstScreenInChromium(t *testing.T) {
	chromium := chromiumOrSkip(t)
	dir := t.TempDir()
	log := writeScaleLog(t, dir)
	html := filepath.Join(dir, "pack.html")
	var out, errb bytes.Buffer
	if code := run([]string{"report", "--audit", log, "-o", filepath.Join(dir, "pack.md"), "--html", html}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	probe := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(probe, []byte(firstScreenProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=" + filepath.Join(dir, "profile"),
		"--window-size=1280,1000"}
	dom, err := exec.Command(chromium, append(flags, "--allow-file-access-from-files", "--virtual-time-budget=5000", "--dump-dom", "file://"+probe)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	m := regexp.MustCompile(`data-layout="([^"]*)"`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe measured nothing:\n%.2000s", dom)
	}
	var at struct{ Status, Findings, Calls, Summary, Rows int }
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(m[1]), "&quot;", `"`)), &at); err != nil {
		t.Fatalf("%v: %s", err, m[1])
	}
	t.Logf("first screen: status at %dpx, findings at %dpx, the calls' table ends at %dpx (%d rows), the summary starts at %dpx", at.Status, at.Findings, at.Calls, at.Rows, at.Summary)
	if !(at.Status >= 0 && at.Status < at.Findings && at.Findings < at.Calls && at.Calls <= 1000 && at.Rows == 10 && at.Summary > at.Calls) {
		t.Errorf("the first screen (1000px) does not carry the status, findings and the calls that need a look: %+v", at)
	}
	shot := filepath.Join(dir, "first-screen.png")
	if b, err := exec.Command(chromium, append(flags, "--screenshot="+shot, "file://"+html)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, b)
	}
	png, err := os.ReadFile(shot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 10000 {
		t.Fatalf("no screenshot: %v (%d bytes)", err, len(png))
	}
	t.Logf("screenshot of the first screen: %s (%d bytes)", shot, len(png))
}

// firstScreenProbe frames the pack and writes where its parts end, in
// pixels from the top of the frame, on its own body.
const firstScreenProbe = `<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="pack.html" style="width:1280px;height:1000px;border:0"></iframe>
<script>
document.getElementById('f').addEventListener('load', function () {
  var d = this.contentDocument, out = {};
  var top = function (id) { var e = d.getElementById(id); return e ? Math.round(e.getBoundingClientRect().top) : -1; };
  var strong = d.querySelector('strong');
  out.Status = strong && strong.textContent.indexOf('Status:') === 0 ? Math.round(strong.getBoundingClientRect().top) : -1;
  out.Findings = top('findings');
  out.Summary = top('audit-summary');
  var e = d.getElementById('calls-that-need-a-look');
  while (e && e.tagName !== 'TABLE') e = e.nextElementSibling;
  out.Calls = e ? Math.round(e.getBoundingClientRect().bottom) : -1;
  out.Rows = e ? e.querySelectorAll('tbody tr').length : 0;
  document.body.setAttribute('data-layout', JSON.stringify(out));
});
</script></body></html>
`
