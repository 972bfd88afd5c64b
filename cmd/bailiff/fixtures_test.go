package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"bailiff/internal/golden"
)

// TestTraceFixtures replays every trace under fixtures/traces/<policy>/
// under fixtures/policies/<policy>.yaml. Each fixture is named
// <verdict>_<check>_<what>: its last call must end with that verdict and
// check, whatever the golden file says, and the whole output must match
// golden/replay/<policy>/<fixture>.jsonl.
func TestTraceFixtures(t *testing.T) {
	dirs, err := filepath.Glob("../../fixtures/traces/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixture directories: %v", err)
	}
	total := 0
	for _, dir := range dirs {
		pol := filepath.Join("../../fixtures/policies", filepath.Base(dir)+".yaml")
		traces, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for _, tr := range traces {
			total++
			name := strings.TrimSuffix(filepath.Base(tr), ".jsonl")
			t.Run(filepath.Base(dir)+"/"+name, func(t *testing.T) {
				var out, errb bytes.Buffer
				code := run([]string{"replay", "--policy", pol, "--format", "json", tr}, nil, &out, &errb)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errb.String())
				}
				lines := strings.Split(strings.TrimSpace(out.String()), "\n")
				var last struct{ Verdict, Check string }
				if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
					t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
				}
				parts := strings.SplitN(name, "_", 3)
				if len(parts) < 3 {
					t.Fatalf("fixture name %q is not <verdict>_<check>_<what>", name)
				}
				if last.Verdict != parts[0] || last.Check != parts[1] {
					t.Errorf("last call: verdict %s check %s; the name promises %s %s", last.Verdict, last.Check, parts[0], parts[1])
				}
				golden.Check(t, filepath.Join("../../golden/replay", filepath.Base(dir), name+".jsonl"), out.Bytes())
			})
		}
	}
	if total < 40 {
		t.Errorf("only %d trace fixtures; the suite wants at least 40", total)
	}
}
