package verify

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"bailiff/chain"
	"bailiff/engine"
)

// Every provenance-tier verdict is recomputed from the log alone: the
// recorded log of each tier fixture verifies clean; a first-party ask or
// a self-published ask forged into an allow is a verdict finding, and so
// is a first-party ask whose tainting output is forged to another.
func TestTierVerdictsVerify(t *testing.T) {
	p := tiersPolicy(t)
	traces, _ := filepath.Glob("../fixtures/traces/tiers/*.jsonl")
	if len(traces) < 6 {
		t.Fatalf("only %d tier fixtures", len(traces))
	}
	asks := 0
	for _, tr := range traces {
		name := filepath.Base(tr)
		data, ev := recordTrace(t, p, tr)
		rep, err := Log(name, bytes.NewReader(data), ev, Options{})
		if err != nil || len(rep.Findings) != 0 {
			t.Fatalf("%s: the recorded log does not verify: %v %+v", name, err, rep)
		}
		if !strings.HasPrefix(name, "ask_") {
			continue
		}
		asks++
		for what, edit := range map[string]func([]byte) []byte{
			"verdict": func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"verdict":"ask","check":"taint"`), []byte(`"verdict":"allow","check":"rules"`), 1)
			},
			"source": func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"tool":"get_case"}`), []byte(`"tool":"fetch"}`), 1)
			},
		} {
			forged := 0
			resealed := reseal(t, data, func(kind chain.Kind, body []byte) []byte {
				if kind != chain.KindCall {
					return body
				}
				b := edit(body)
				if !bytes.Equal(b, body) {
					forged++
				}
				return b
			})
			if forged == 0 {
				if what == "source" && !strings.Contains(name, "first_party") {
					continue
				}
				t.Fatalf("%s: nothing to forge (%s)", name, what)
			}
			rep, err := Log(name, bytes.NewReader(resealed), ev, Options{})
			if err != nil {
				t.Fatal(err)
			}
			found := 0
			for _, f := range rep.Findings {
				if f.Kind == FindVerdict {
					found++
				}
			}
			if found != forged {
				t.Errorf("%s: %d %ss forged, %d found: %+v", name, forged, what, found, rep.Findings)
			}
		}
	}
	if asks < 3 {
		t.Fatalf("only %d ask fixtures", asks)
	}
}

// The principal's address that trusted_destinations: [principal] trusts
// is the one the session record carries: a log whose record loses it no
// longer recomputes the allow it recorded.
func TestPrincipalAddressFromRecord(t *testing.T) {
	p := tiersPolicy(t)
	data, ev := recordTrace(t, p, "../fixtures/traces/tiers/allow_rules_principal_own_address.jsonl")
	if !bytes.Contains(data, []byte(`"email":"ana@corp.example"`)) {
		t.Fatalf("the session record does not carry the principal's address")
	}
	rep, err := Log("log", bytes.NewReader(data), ev, Options{})
	if err != nil || len(rep.Findings) != 0 {
		t.Fatalf("the recorded log does not verify: %v %+v", err, rep)
	}
	edited := 0
	resealed := reseal(t, data, func(kind chain.Kind, body []byte) []byte {
		if kind != chain.KindSession {
			return body
		}
		b := bytes.Replace(body, []byte(`,"email":"ana@corp.example"`), nil, 1)
		if !bytes.Equal(b, body) {
			edited++
		}
		return b
	})
	if edited != 1 {
		t.Fatalf("%d session records edited, want 1", edited)
	}
	rep, err = Log("log", bytes.NewReader(resealed), ev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, f := range rep.Findings {
		if f.Kind == FindVerdict && strings.HasPrefix(f.Recorded, "allow") {
			found++
		}
	}
	if found != 1 {
		t.Fatalf("without the address, %d allows found wrong, want 1: %+v", found, rep.Findings)
	}
}

func tiersPolicy(t *testing.T) *engine.Policy {
	t.Helper()
	return loadPolicy(t, "../fixtures/policies/tiers.yaml")
}
