package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"bailiff/internal/golden"
)

// TestShadowAblateGolden pins shadow and ablate output, in every format,
// over traces (with a baseline policy), over audit logs made by record
// (baseline recorded, with redacted and purged inputs), and over the
// labelled corpus.
func TestShadowAblateGolden(t *testing.T) {
	const fx = "../../fixtures"
	logs := []string{fx + "/chain/good_mail.jsonl", fx + "/chain/good_web.jsonl", fx + "/chain/good_purged.jsonl"}
	runs := map[string][]string{
		"shadow/traces": {"shadow", "--baseline", fx + "/policies/main.yaml", "--candidate", fx + "/policies/ask-on-taint.yaml", fx + "/traces/main"},
		"shadow/corpus": {"shadow", "--baseline", fx + "/corpus/policy.yaml", "--candidate", fx + "/policies/corpus-candidate.yaml", fx + "/corpus"},
		"shadow/logs":   append([]string{"shadow", "--candidate", fx + "/chain/src/candidate.yaml"}, logs...),
		"ablate/corpus": {"ablate", "--policy", fx + "/corpus/policy.yaml", "--rules", fx + "/corpus"},
		"ablate/logs":   append([]string{"ablate", "--labels", fx + "/chain/src/labels.jsonl"}, logs...),
	}
	for name, args := range runs {
		for _, f := range []string{"table", "json", "markdown"} {
			t.Run(name+"."+f, func(t *testing.T) {
				var out, errb bytes.Buffer
				if code := run(append(append([]string{}, args...), "--format", f), &out, &errb); code != 0 {
					t.Fatalf("exit %d: %s", code, errb.String())
				}
				golden.Check(t, filepath.Join("../../golden", name+"."+f), out.Bytes())
			})
		}
	}
}

// TestShadowAblateGates: the CI gates exit 1 when they trip, 0 when not,
// and bad usage exits 2.
func TestShadowAblateGates(t *testing.T) {
	const fx = "../../fixtures"
	cases := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"shadow", "--candidate", fx + "/chain/src/candidate.yaml", "--fail-on", "newly-allowed", fx + "/chain/good_mail.jsonl"}, 1, "2 calls are newly-allowed (at most 0 allowed)"},
		{[]string{"shadow", "--candidate", fx + "/chain/src/candidate.yaml", "--fail-on", "newly-allowed", "--max-changed", "2", fx + "/chain/good_mail.jsonl"}, 0, ""},
		{[]string{"shadow", "--candidate", fx + "/chain/src/candidate.yaml", "--fail-on", "newly-denied", fx + "/chain/good_mail.jsonl"}, 0, ""},
		{[]string{"shadow", "--candidate", fx + "/chain/src/candidate.yaml", fx + "/traces/main"}, 2, "needs a baseline policy"},
		{[]string{"shadow", "--candidate", fx + "/chain/src/candidate.yaml", "--fail-on", "worse", fx + "/chain/good_mail.jsonl"}, 2, "is not a category"},
		{[]string{"shadow", "--candidate", fx + "/chain/src/candidate.yaml", fx + "/chain/fail_edited_field.jsonl"}, 2, "run bailiff verify"},
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--fail-on-dead", fx + "/corpus"}, 1, "check scopes is dead"},
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--min-block-rate", "0.9", "--max-benign-loss", "0.2", fx + "/corpus"}, 0, ""},
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--max-benign-loss", "0.01", fx + "/corpus"}, 1, "more than 0.01"},
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--min-block-rate", "2", fx + "/corpus"}, 2, "not a number from 0 to 1"},
		{[]string{"ablate", "--rules", fx + "/corpus"}, 2, "--rules needs --policy"},
		{[]string{"ablate", "--labels", fx + "/chain/src/policy.yaml", fx + "/chain/good_mail.jsonl"}, 2, "policy.yaml is a policy, not a labels file"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[:2], " ")+c.err, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(c.args, &out, &errb); code != c.code || !strings.Contains(errb.String(), c.err) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errb.String(), c.code, c.err)
			}
		})
	}
}

// TestReadmeAblation keeps the ablation table the README quotes true.
func TestReadmeAblation(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"ablate", "--policy", "../../fixtures/corpus/policy.yaml", "../../fixtures/corpus"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	table := strings.SplitN(out.String(), "\n\n", 2)[0]
	if !strings.Contains(string(readme), "```\n"+table+"\n```") {
		t.Errorf("README.md does not quote the corpus ablation as it is now:\n%s", table)
	}
}
