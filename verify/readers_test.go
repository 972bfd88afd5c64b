package verify

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

// The verdicts that compare every reader of a destination are recomputed
// from the log alone: a recorded log of the trusted-looking spellings
// verifies clean, and each one forged back into the allow it used to get
// is a verdict finding. The test fails if verify stops recomputing these
// verdicts, or if the engine trusts the spellings again.
func TestReaderVerdictsVerify(t *testing.T) {
	p := mainPolicy(t)
	for _, name := range []string{"deny_taint_mailto_encoded_list", "ask_taint_mail_percent_hack", "ask_taint_url_backslash_authority", "ask_taint_url_dotdot_semicolon"} {
		data, ev := recordTrace(t, p, "../fixtures/traces/main/"+name+".jsonl")
		rep, err := Log(name, bytes.NewReader(data), ev, Options{})
		if err != nil || len(rep.Findings) != 0 {
			t.Fatalf("%s: the recorded log does not verify: %v %+v", name, err, rep)
		}
		forged := 0
		resealed := reseal(t, data, func(kind chain.Kind, body []byte) []byte {
			if kind != chain.KindCall || !bytes.Contains(body, []byte(`"check":"taint"`)) {
				return body
			}
			for _, v := range []string{`"verdict":"deny"`, `"verdict":"ask"`} {
				if b := bytes.Replace(body, []byte(v+`,"check":"taint"`), []byte(`"verdict":"allow","check":"rules"`), 1); !bytes.Equal(b, body) {
					forged++
					return b
				}
			}
			return body
		})
		if forged == 0 {
			t.Fatalf("%s: no taint verdict to forge", name)
		}
		rep, err = Log(name, bytes.NewReader(resealed), ev, Options{})
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, f := range rep.Findings {
			if f.Kind == FindVerdict && strings.HasPrefix(f.Recorded, "allow") {
				found++
			}
		}
		if found != forged {
			t.Errorf("%s: %d verdicts forged into allows, %d found: %+v", name, forged, found, rep.Findings)
		}
	}
}

func mainPolicy(t *testing.T) *engine.Policy {
	t.Helper()
	return loadPolicy(t, "../fixtures/policies/main.yaml")
}

// loadPolicy loads the policy file at path.
func loadPolicy(t *testing.T, path string) *engine.Policy {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := engine.Load(filepath.Base(path), text)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// recordTrace records the trace at path under p, as bailiff record does,
// into a fresh log with its evidence beside it.
func recordTrace(t *testing.T, p *engine.Policy, path string) ([]byte, chain.Evidence) {
	t.Helper()
	tr, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	events, err := replay.ParseTrace(filepath.Base(path), bytes.NewReader(tr))
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := chain.Open(logPath, chain.Sync)
	if err != nil {
		t.Fatal(err)
	}
	ev := chain.OpenEvidence(chain.EvidenceDir(logPath))
	if err := (&audit.Recorder{Policy: p, Log: w, Evidence: ev}).Record("trace", events); err != nil {
		t.Fatal(err)
	}
	w.Close()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	return data, ev
}
