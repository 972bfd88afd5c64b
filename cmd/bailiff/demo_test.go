package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"bailiff/internal/demo"
	"bailiff/internal/golden"
)

// runDemoIn runs bailiff demo into a new directory; the gateway and the
// demo server it starts are this test binary, running the CLI.
func runDemoIn(t *testing.T, args ...string) (dir string, code int, out, errs string) {
	t.Helper()
	t.Setenv(childEnv, "1")
	// A user's own defaults for bailiff run must not reach the demo's
	// gateway: with them it would serve a URL that is not there.
	t.Setenv("BAILIFF_URL", "http://127.0.0.1:1/mcp")
	t.Setenv("BAILIFF_POLICY", "/nonexistent/policy.yaml")
	dir = filepath.Join(t.TempDir(), "demo")
	var stdout, stderr bytes.Buffer
	code = run(append([]string{"demo", "-o", dir}, args...), nil, &stdout, &stderr)
	// The directory's name is the one thing that differs between runs.
	return dir, code, strings.ReplaceAll(stdout.String(), dir, "$DIR"), stderr.String()
}

// TestDemo runs the demo end to end, in both formats, against golden
// files; then checks what it left behind by itself: the log verifies, the
// pack renders in a real Chromium without running a script or logging a
// console error.
func TestDemo(t *testing.T) {
	dir, code, out, errs := runDemoIn(t, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	golden.Check(t, "../../golden/demo/summary.json", []byte(out))
	var sum demoSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil || !sum.OK || len(sum.Calls) != 8 || len(sum.Disk) != 5 {
		t.Fatalf("summary: %v %+v", err, sum)
	}

	var vout, verr bytes.Buffer
	if code := run([]string{"verify", filepath.Join(dir, "audit.jsonl")}, nil, &vout, &verr); code != 0 {
		t.Fatalf("verify of the demo's log: exit %d: %s%s", code, vout.String(), verr.String())
	}
	if code := run([]string{"verify", filepath.Join(dir, "tampered.jsonl"), "--evidence", filepath.Join(dir, "audit.jsonl.evidence")}, nil, &vout, &verr); code != 1 {
		t.Fatalf("verify of the tampered copy: exit %d, want 1", code)
	}
	for _, f := range []string{"pack.md", "pack.html", "shadow.json", "ablate.json", "labels.jsonl", "policy.yaml", "stricter.yaml"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("the demo left no %s: %v", f, err)
		}
	}
	pack, _ := os.ReadFile(filepath.Join(dir, "pack.md"))
	packLeadsWithConclusion(t, string(pack), "CLEAN")
	for _, want := range []string{"- Attacks stopped: 3 of 3 labelled attack calls", "- Asks: 1: 1 approved, 0 declined, 0 unanswered"} {
		if !strings.Contains(string(pack), want) {
			t.Errorf("the pack does not say %q", want)
		}
	}
	chromiumOpens(t, filepath.Join(dir, "pack.html"))
	packFromAblation(t, dir)

	_, code, out, errs = runDemoIn(t)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	golden.Check(t, "../../golden/demo/transcript.txt", []byte(out))
}

// TestDemoChecksCanFail: with a policy that stops nothing, the attacks
// reach the disk, and the demo says so: its disk checks fail by name and
// it exits 1. The checks read the files, not the log.
func TestDemoChecksCanFail(t *testing.T) {
	defer func(p func(demo.Layout) string) { demoPolicy = p }(demoPolicy)
	demoPolicy = func(demo.Layout) string {
		return "version: 1\nrules:\n  - {id: anything, tool: \"*\", action: allow}\ntools:\n  \"*\": {exfiltrating: false}\n"
	}
	dir, code, out, errs := runDemoIn(t, "--format", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s\n%s", code, errs, out)
	}
	var sum demoSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.OK {
		t.Fatalf("summary: %v ok=%v", err, sum.OK)
	}
	failed := map[string]bool{}
	for _, c := range sum.Disk {
		if !c.OK {
			failed[c.Name] = true
		}
	}
	for _, want := range []string{"no mail went to the attacker's address", "nothing was written outside the workspace", "no workspace file was deleted or changed"} {
		if !failed[want] {
			t.Errorf("check %q held though the attack went through: %+v", want, sum.Disk)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "office", ".bashrc")); err != nil {
		t.Errorf("the permissive gateway did not let the write through, so this test proves nothing: %v", err)
	}
}

// TestDemoRefusesNonEmptyDir: the demo never writes over anything.
func TestDemoRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"demo", "-o", dir}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "is not empty") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if b, _ := os.ReadFile(keep); string(b) != "mine" {
		t.Error("the demo touched a file it did not make")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the demo wrote into a non-empty directory: %v", entries)
	}
}

// chromiumOpens renders a pack in headless Chromium with console logging
// on: the page must render, no script may run, and nothing may be logged
// to the console (a blocked resource, a CSP violation, an error).
func chromiumOpens(t *testing.T, html string) {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("BAILIFF_CHROMIUM_REQUIRED") != "" {
			t.Fatal("chromium is not installed")
		}
		t.Log("chromium is not installed: the pack's rendering is not checked")
		return
	}
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir=" + filepath.Join(t.TempDir(), "profile"), "--enable-logging=stderr", "--v=0"}
	cmd := exec.Command(chromium, append(flags, "--dump-dom", "file://"+html)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	if !bytes.Contains(dom, []byte("bailiff review pack")) {
		t.Fatalf("chromium did not render the pack:\n%.500s", dom)
	}
	if regexp.MustCompile(`(?i)<script`).Match(dom) {
		t.Error("the pack has a script element")
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") || strings.Contains(line, "Content Security Policy") {
			t.Errorf("console: %s", line)
		}
	}
}

// readmeDemoDir is the directory the README's quoted demo ran in.
const readmeDemoDir = "/tmp/bailiff-demo-2716048373"

// TestReadmeDemo keeps the demo transcript the README quotes whole and
// true, its first line included: a newcomer compares the two. Only the
// directory's name differs between runs.
func TestReadmeDemo(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, code, out, errs := runDemoIn(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	out = strings.ReplaceAll(out, "$DIR", readmeDemoDir)
	if !strings.Contains(string(readme), "```\n"+out+"```") {
		t.Errorf("README.md does not quote the demo's output as it is now:\n%s", out)
	}
}

// TestDemoProgressOnTerminal: on a terminal the demo shows which stage it
// is in, and clears it before the transcript; off one (TestDemo, the
// script test) stderr stays empty.
func TestDemoProgressOnTerminal(t *testing.T) {
	t.Setenv(childEnv, "1")
	tty, read := openTerminal(t)
	var out bytes.Buffer
	code := run([]string{"demo", "-o", filepath.Join(t.TempDir(), "demo")}, nil, &out, tty)
	tty.Close()
	got := read()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, got)
	}
	for _, stage := range []string{"running the agent through bailiff run", "bailiff verify", "bailiff report", "(7/8)"} {
		if !strings.Contains(got, stage) {
			t.Errorf("the terminal never showed %q: %q", stage, got)
		}
	}
	if !strings.Contains(out.String(), "Every check held.") {
		t.Errorf("no transcript on stdout:\n%s", out.String())
	}
}

// packFromAblation: the pack believes an ablation only as far as it
// adds up. Labels that call an allowed call an attack make the status
// FINDINGS, with the attack named; totals no run could print are refused.
func packFromAblation(t *testing.T, dir string) {
	t.Helper()
	log := filepath.Join(dir, "audit.jsonl")
	labels := filepath.Join(dir, "labels-c1.jsonl")
	if err := os.WriteFile(labels, []byte(`{"session":"demo","call":"c1","label":"attack"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var abl, errb bytes.Buffer
	if code := run([]string{"ablate", "--labels", labels, "--format", "json", log}, nil, &abl, &errb); code != 0 {
		t.Fatalf("ablate: exit %d: %s", code, errb.String())
	}
	ablFile := filepath.Join(dir, "ablate-c1.json")
	if err := os.WriteFile(ablFile, abl.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "pack-c1.md")
	if code := run([]string{"report", "--audit", log, "--ablate", ablFile, "-o", md}, nil, &abl, &errb); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errb.String())
	}
	pack, _ := os.ReadFile(md)
	if !strings.Contains(string(pack), "**Status: FINDINGS.**") || !strings.Contains(string(pack), "attack-not-stopped") {
		t.Errorf("a labelled attack that was allowed leaves the pack:\n%s", pack)
	}
	forged := strings.Replace(abl.String(), `"attacks_stopped":0`, `"attacks_stopped":50`, 1)
	if forged == abl.String() {
		t.Fatal("setup: no attacks_stopped to forge")
	}
	if err := os.WriteFile(ablFile, []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := run([]string{"report", "--audit", log, "--ablate", ablFile, "-o", filepath.Join(dir, "pack-forged.md"), "--force"}, nil, &abl, &errb); code != 2 || !strings.Contains(errb.String(), "stops more calls than it counts") {
		t.Errorf("forged totals: exit %d: %s", code, errb.String())
	}
	// Totals that add up among themselves must still be these logs'.
	shadowJSON, _ := os.ReadFile(filepath.Join(dir, "shadow.json"))
	honest, _ := os.ReadFile(filepath.Join(dir, "ablate.json"))
	for name, c := range map[string]struct{ flag, file, from, to, want string }{
		"ablate over 1000 calls":   {"--ablate", "ablate.json", `"type":"policy","calls":8`, `"type":"policy","calls":1000`, "does not fit the policy line"},
		"ablate, two policy lines": {"--ablate", "ablate.json", "\n", "\n" + strings.SplitN(string(honest), "\n", 2)[0] + "\n", "two policy lines"},
		"shadow, a negative count": {"--shadow", "shadow.json", `"newly-denied":1`, `"newly-denied":-1`, "negative count"},
		// A key given twice would be read as its last value here and
		// maybe its first elsewhere: refused, top level and nested.
		"ablate, calls twice":   {"--ablate", "ablate.json", `"type":"policy","calls":8`, `"type":"policy","calls":1000,"calls":8`, `forged-ablate.json: line 1: duplicate key "calls" at byte`},
		"shadow, a count twice": {"--shadow", "shadow.json", `"newly-denied":1`, `"newly-denied":0,"newly-denied":1`, `forged-shadow.json: line 1: duplicate key "newly-denied" at byte`},
		"shadow over 9 calls":   {"--shadow", "shadow.json", `"calls":8,"counts":{"newly-allowed":0,"newly-asked":0,"newly-denied":1,"unchanged":7`, `"calls":9,"counts":{"newly-allowed":0,"newly-asked":0,"newly-denied":1,"unchanged":8`, "counts 9 calls, and the logs hold 8"},
	} {
		orig := honest
		if c.flag == "--shadow" {
			orig = shadowJSON
		}
		forged := strings.Replace(string(orig), c.from, c.to, 1)
		if forged == string(orig) {
			t.Fatalf("%s: setup: nothing to forge", name)
		}
		f := filepath.Join(dir, "forged-"+c.file)
		if err := os.WriteFile(f, []byte(forged), 0o644); err != nil {
			t.Fatal(err)
		}
		errb.Reset()
		if code := run([]string{"report", "--audit", log, c.flag, f, "-o", filepath.Join(dir, "pack-forged.md"), "--force"}, nil, &abl, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%s: exit %d: %s", name, code, errb.String())
		}
	}
}

// TestDemoSummaryOK: the demo's verdict on itself fails when any one of
// the things it stands for does not hold.
func TestDemoSummaryOK(t *testing.T) {
	b, err := os.ReadFile("../../golden/demo/summary.json")
	if err != nil {
		t.Fatal(err)
	}
	fresh := func() *demoSummary {
		var s demoSummary
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		for i, st := range demo.Script(demo.Layout{Dir: "/x"}) {
			s.Calls[i].wantAsk = st.Ask
		}
		return &s
	}
	if !fresh().ok() {
		t.Fatal("the golden summary is not ok")
	}
	for name, spoil := range map[string]func(*demoSummary){
		"an attack allowed":                   func(s *demoSummary) { s.Calls[2].Verdict = "allow" },
		"an attack the agent saw go":          func(s *demoSummary) { s.Calls[2].Refused = false },
		"benign work refused":                 func(s *demoSummary) { s.Calls[6].Refused = true },
		"the ask never asked":                 func(s *demoSummary) { s.Calls[7].Asked = false },
		"a disk check failed":                 func(s *demoSummary) { s.Disk[0].OK = false },
		"a verdict not recomputed":            func(s *demoSummary) { s.Verify.Unevaluable = 1 },
		"a verify finding":                    func(s *demoSummary) { s.Verify.Findings = 1 },
		"fewer calls verified than made":      func(s *demoSummary) { s.Verify.Calls = 7 },
		"the tampered copy passed":            func(s *demoSummary) { s.Tampered.Exit = 0 },
		"the stricter policy changed nothing": func(s *demoSummary) { s.Shadow.Changes["newly-denied"] = 0 },
		"an attack ablate saw go":             func(s *demoSummary) { s.Ablate.Stopped = 2 },
		"the pack not clean":                  func(s *demoSummary) { s.Report.Status = "findings" },
	} {
		s := fresh()
		spoil(s)
		if s.ok() {
			t.Errorf("%s: the demo still says every check held", name)
		}
	}
}

// TestDemoRefusesSharedDir: a directory others may write into could get
// a symlink planted where the demo is about to write.
func TestDemoRefusesSharedDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"demo", "-o", dir}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "writable by others") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the demo wrote into a shared directory: %v", entries)
	}
}

// TestDemoRefusesSharedAncestor: a new directory inside one someone else
// may write to (without the sticky bit) could be swapped for a symlink
// after it is made; /tmp-like sticky directories are fine.
func TestDemoRefusesSharedAncestor(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"demo", "-o", filepath.Join(parent, "run")}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "could swap it for a symlink") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("the demo made %v in a shared directory", entries)
	}
	if err := os.Chmod(parent, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if problem, err := sharedAncestor(parent); err != nil || problem != "" {
		t.Errorf("a sticky directory is refused: %q %v", problem, err)
	}
}
