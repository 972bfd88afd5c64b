package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every kind of finding the pack can show has its sentence: the pack's
// own (Rule: "…" in this package), verify's (verify-<kind>) and lint's
// (the engine's lint kinds), read from the sources so a new kind without
// one fails here.
func TestEveryFindingHasAdvice(t *testing.T) {
	kinds := map[string]bool{}
	scan := func(glob string, re *regexp.Regexp, prefix string) {
		files, err := filepath.Glob(glob)
		if err != nil || len(files) == 0 {
			t.Fatalf("no sources at %s: %v", glob, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range re.FindAllSubmatch(b, -1) {
				kinds[prefix+string(m[1])] = true
			}
		}
	}
	scan("*.go", regexp.MustCompile(`Rule: "([a-z-]*[a-z])"`), "")
	scan("../verify/verify.go", regexp.MustCompile(`Find[A-Z][a-z]+ *= "([a-z]+)"`), "verify-")
	scan("../engine/lint*.go", regexp.MustCompile(`lint[A-Z][A-Za-z]* *= "([a-z-]+)"`), "")
	if len(kinds) < 30 {
		t.Fatalf("found only %d kinds of finding: the scan is broken: %v", len(kinds), kinds)
	}
	for k := range kinds {
		if advice[k] == "" {
			t.Errorf("finding %q has no sentence saying what it means and what to do", k)
		}
	}
}

// An ablation result that names some of the attacks let through names
// them all, or the pack would list a part as the whole.
func TestAblationThroughMustAddUp(t *testing.T) {
	const policy = `{"type":"policy","calls":10,"attacks":3,"attacks_stopped":1,"block_rate":0.3333333333333333,"benign":1,"benign_stopped":0,"benign_loss":0,"attacks_denied":1,"benign_denied":0,"verified":true,"inputs":[]}`
	const one = `{"type":"through","file":"a.jsonl","session":"s1","pos":4,"call":"c3","tool":"send_email","verdict":"allow by rules (send-mail)"}`
	const two = `{"type":"through","file":"a.jsonl","session":"s2","pos":18,"call":"d3","tool":"archive_message","verdict":"allow by approval (archive-asks)"}`
	if _, err := readAblation([]byte(policy + "\n" + one + "\n")); err == nil || !strings.Contains(err.Error(), "names 1 attack calls let through, and its policy line counts 2") {
		t.Errorf("a partial list was read: %v", err)
	}
	r, err := readAblation([]byte(policy + "\n" + one + "\n" + two + "\n"))
	if err != nil || len(r.through) != 2 {
		t.Fatalf("the whole list was not read: %v", err)
	}
	// An older result, naming none, is read, and the finding says so.
	r, err = readAblation([]byte(policy + "\n"))
	if err != nil || !strings.Contains(throughText(r.through), "names no call") {
		t.Errorf("an older result: %v %q", err, throughText(r.through))
	}
}

// The command the pack gives for the calls it did not list lists the
// calls the pack counts: its period, its logs, each quoted for a shell.
func TestCallsCommandMatchesPack(t *testing.T) {
	p := &Pack{In: PackInput{Since: time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)}, Logs: []LogStatus{{File: "a.jsonl"}, {File: "my log's.jsonl"}}}
	got := p.callsCommand("--verdict deny")
	want := mdEscape(`bailiff calls --verdict deny --since 2026-11-03T09:00:00Z a.jsonl 'my log'\''s.jsonl'`)
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}
