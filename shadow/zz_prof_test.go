package shadow

import (
	"os"
	"testing"

	"bailiff/engine"
)

func TestZZProf(t *testing.T) {
	p := os.Getenv("BIGLOG")
	if p == "" {
		t.Skip()
	}
	var cands []Candidate
	for _, c := range engine.Switchable() {
		cands = append(cands, func(p *engine.Policy) (*engine.Policy, error) { return p.Without(engine.OffCheck(c)) })
	}
	n := 0
	if err := CompareEach([]Input{{Name: p, Verify: verifyFollowing(p)}}, nil, cands, func(int, Pair) { n++ }); err != nil {
		t.Fatal(err)
	}
	t.Logf("pairs %d", n)
}
