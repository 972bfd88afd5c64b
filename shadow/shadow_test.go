package shadow

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
)

func load(t *testing.T, name string) *engine.Policy {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := engine.Load(name, data)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSamePolicyChangesNothing: a candidate identical to the baseline
// changes no verdict, over every trace fixture (baseline replayed) and
// every good audit log (baseline recorded); only decisions that depend on
// redacted or purged inputs are unevaluable.
func TestSamePolicyChangesNothing(t *testing.T) {
	dirs, _ := filepath.Glob("../fixtures/traces/*")
	total := 0
	for _, dir := range dirs {
		pol := load(t, filepath.Join("../fixtures/policies", filepath.Base(dir)+".yaml"))
		traces, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for _, tr := range traces {
			data, _ := os.ReadFile(tr)
			events, err := replay.ParseTrace(tr, bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			want, err := audit.Replay(pol, tr, events)
			if err != nil {
				t.Fatal(err)
			}
			i := 0
			err = CompareSession(pol, pol, tr, audit.TraceSteps(events), func(p Pair) {
				total++
				if c := Category(p); c != Unchanged && c != Unevaluable {
					t.Errorf("%s call %s: %s (%s vs %s)", tr, p.ID, c, p.Baseline.Verdict, p.Candidate.Verdict)
				}
				if i < len(want) && want[i].Decision.Verdict != p.Baseline.Verdict {
					t.Errorf("%s call %s: baseline %s, replay says %s", tr, p.ID, p.Baseline.Verdict, want[i].Decision.Verdict)
				}
				i++
			})
			if err != nil {
				t.Fatal(err)
			}
			if i != len(want) {
				t.Errorf("%s: %d pairs, replay has %d calls", tr, i, len(want))
			}
		}
	}
	logs, _ := filepath.Glob("../fixtures/chain/good_*.jsonl")
	for _, name := range logs {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		uneval := 0
		err = audit.LogSessions(name, f, chain.OpenEvidence(chain.EvidenceDir(name)), func(s audit.LogSession) error {
			return CompareSession(s.Policy, s.Policy, name, s.Events, func(p Pair) {
				total++
				switch Category(p) {
				case Unchanged:
				case Unevaluable:
					uneval++
				default:
					t.Errorf("%s call %s: %s (%s vs %s: %s)", name, p.ID, Category(p), p.Baseline.Verdict, p.Candidate.Verdict, p.Candidate.Reason)
				}
			})
		})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(name, "purged") || strings.Contains(name, "web") {
			if uneval == 0 {
				t.Errorf("%s: no unevaluable call, though inputs were redacted or purged", name)
			}
		} else if uneval != 0 {
			t.Errorf("%s: %d unevaluable calls", name, uneval)
		}
	}
	if total < 100 {
		t.Errorf("only %d calls compared", total)
	}
}
