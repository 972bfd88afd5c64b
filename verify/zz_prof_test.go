package verify

import (
	"os"
	"testing"

	"bailiff/chain"
)

func TestZZProf(t *testing.T) {
	p := os.Getenv("BIGLOG")
	if p == "" {
		t.Skip()
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Log(p, f, chain.Evidence{Dir: p + ".evidence"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("records %d calls %d findings %d", rep.Records, rep.Calls, len(rep.Findings))
}
