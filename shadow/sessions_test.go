package shadow

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"bailiff/audit"
	"bailiff/engine"
	"bailiff/replay"
)

// TestCompareSessionsIsEachCompared: comparing several candidates in one
// pass, over one baseline, gives every candidate exactly the pairs its
// own CompareSession gives, in the same order, on every trace fixture
// (with each check switched off in turn, as ablate does). Sharing the
// baseline's history and the output analysis must change nothing.
func TestCompareSessionsIsEachCompared(t *testing.T) {
	for _, set := range []string{"main", "ask-on-taint"} {
		data, err := os.ReadFile(filepath.Join("..", "fixtures", "policies", set+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		base, err := engine.Load(set+".yaml", data)
		if err != nil {
			t.Fatal(err)
		}
		var cands []*engine.Policy
		for _, c := range []string{"taint", "approval", "budget", "path", "pattern", "pinning", "scopes"} {
			p, err := base.Without(engine.ParseOff(c))
			if err != nil {
				t.Fatal(err)
			}
			cands = append(cands, p)
		}
		files, _ := filepath.Glob(filepath.Join("..", "fixtures", "traces", set, "*.jsonl"))
		if len(files) == 0 {
			t.Fatal("no trace fixtures")
		}
		for _, file := range files {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			events, err := replay.ParseTrace(file, f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			want := make([][]Pair, len(cands))
			for i, c := range cands {
				evs, _ := replay.ParseTrace(file, mustOpen(t, file))
				if err := CompareSession(base, c, file, audit.TraceSteps(evs), func(p Pair) { want[i] = append(want[i], p) }); err != nil {
					t.Fatal(err)
				}
			}
			got := make([][]Pair, len(cands))
			var order []int
			if err := compareSessions(base, cands, nil, file, audit.TraceSteps(events), func(i int, p Pair) {
				got[i] = append(got[i], p)
				order = append(order, i)
			}); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: one pass gives\n%+v\nseparate passes\n%+v", file, got, want)
			}
			for k := 1; k < len(order) && len(events) > 0; k++ {
				if order[k] < order[k-1] && !multiSession(events) {
					t.Errorf("%s: pairs handed on out of candidate order: %v", file, order)
					break
				}
			}
		}
	}
}

func mustOpen(t *testing.T, file string) *os.File {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func multiSession(events []replay.Event) bool {
	n := 0
	for _, e := range events {
		if e.Start != nil {
			n++
		}
	}
	return n > 1
}
