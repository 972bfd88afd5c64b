package shadow

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"bailiff/engine"
)

// variants are ablate's candidates for p: each switchable check off, and
// each of p's rules off.
func variants(p *engine.Policy) []Candidate {
	var names []string
	for _, c := range engine.Switchable() {
		names = append(names, string(c))
	}
	if p != nil {
		for _, r := range p.Spec().Rules {
			names = append(names, "rule:"+r.ID)
		}
	}
	var out []Candidate
	for _, name := range names {
		out = append(out, func(b *engine.Policy) (*engine.Policy, error) { return b.Without(engine.ParseOff(name)) })
	}
	return out
}

// pairsKey renders pairs in a fixed order: sessions of a log are compared
// on every core, so arrival order is not part of the result.
func pairsKey(ps []string) string {
	sort.Strings(ps)
	return fmt.Sprint(ps)
}

// TestCompareEachIsSeparatePasses: one pass under every variant gives
// each variant exactly the pairs a pass of its own gives it. A variant
// whose decisions leaked into another's state (or into the shared,
// once-decoded events) would differ here.
func TestCompareEachIsSeparatePasses(t *testing.T) {
	type set struct {
		inputs []Input
		base   *engine.Policy
		rules  *engine.Policy
	}
	var sets []set
	dirs, _ := filepath.Glob("../fixtures/traces/*")
	for _, dir := range dirs {
		pol := load(t, filepath.Join("../fixtures/policies", filepath.Base(dir)+".yaml"))
		traces, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		for _, tr := range traces {
			in, err := ReadInput(tr)
			if err != nil {
				t.Fatal(err)
			}
			sets = append(sets, set{[]Input{in}, pol, pol})
		}
	}
	logs, _ := filepath.Glob("../fixtures/chain/good_*.jsonl")
	for _, name := range logs {
		sets = append(sets, set{[]Input{{Name: name}}, nil, nil})
	}
	if !testing.Short() {
		// A generated log: many sessions, compared on every core.
		out := filepath.Join(t.TempDir(), "gen.jsonl")
		cmd := exec.Command("go", "run", "../bench/genlog", "-size", "2000000", "-o", out)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		sets = append(sets, set{[]Input{{Name: out}}, nil, nil})
	}
	compared := 0
	for _, s := range sets {
		cands := variants(s.rules)
		one := make([][]string, len(cands))
		err := compareEach(s.inputs, s.base, cands, nil, func(i int, p Pair) { one[i] = append(one[i], fmt.Sprintf("%+v", p)) })
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range cands {
			var alone []string
			if err := Compare(s.inputs, s.base, c, func(p Pair) { alone = append(alone, fmt.Sprintf("%+v", p)) }); err != nil {
				t.Fatal(err)
			}
			if len(alone) == 0 {
				continue
			}
			compared += len(alone)
			if pairsKey(one[i]) != pairsKey(alone) {
				t.Errorf("%s variant %d: one pass differs from its own pass", s.inputs[0].Name, i)
			}
		}
	}
	if compared < 1000 {
		t.Errorf("only %d pairs compared", compared)
	}
}
