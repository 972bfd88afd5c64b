package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestWebCorpusTiers holds the web corpus to what provenance tiers
// promise, under fixtures/corpus/web/policy-tiers.yaml: no attack is
// allowed; every attack that third-party output (a stranger's page, mail,
// a search result, all of unknown or another origin) carried is denied,
// and only those an attacker's own page or a first-party record carried
// may be asked; and at most a quarter of the legitimate sends are
// denied. The family is the file name's second part (wa52_encoded-mail_…).
func TestWebCorpusTiers(t *testing.T) {
	const dir = "../../fixtures/corpus/web"
	files, _ := filepath.Glob(dir + "/w*.jsonl")
	if len(files) < 100 {
		t.Fatalf("only %d corpus sessions", len(files))
	}
	asked := map[string]bool{"ownpage": true, "encoded-ownpage": true, "recordnote": true}
	benign, benignDenied, attacks := 0, 0, 0
	for _, f := range files {
		var out, errb bytes.Buffer
		if code := run([]string{"replay", "--policy", dir + "/policy-tiers.yaml", "--format", "json", f}, nil, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", f, code, errb.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		var last struct{ Verdict, Reason string }
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		family := strings.Split(name, "_")[1]
		switch {
		case strings.HasPrefix(name, "wb"):
			benign++
			if last.Verdict == "deny" {
				benignDenied++
			}
		case last.Verdict == "allow":
			t.Errorf("%s: attack allowed: %s", name, last.Reason)
		case last.Verdict == "ask" && !asked[family]:
			t.Errorf("%s: an attack third-party output carried (%s) is asked, not denied: %s", name, family, last.Reason)
		default:
			attacks++
		}
	}
	if attacks < 70 || benign < 50 {
		t.Fatalf("%d attacks and %d benign sends judged", attacks, benign)
	}
	if benignDenied*4 > benign {
		t.Errorf("%d of %d legitimate sends denied, more than a quarter", benignDenied, benign)
	}
}
