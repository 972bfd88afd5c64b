package verify

import "testing"

func TestEvidential(t *testing.T) {
	for kind, want := range map[string]bool{
		FindIntegrity: false, FindCheckpoint: false, FindPolicy: false, FindRecord: false,
		FindVerdict: true, FindGrant: true, FindEvidence: true,
	} {
		r := &Report{Findings: []Finding{{Kind: FindVerdict}, {Kind: kind}}}
		if got := Evidential(r); got != want {
			t.Errorf("a log with a %s finding: evidential %v, want %v", kind, got, want)
		}
	}
	if !Evidential(&Report{}) {
		t.Error("a log with no findings is not evidential")
	}
}
