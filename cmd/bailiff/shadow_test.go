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
	// good_purged is good_mail with evidence purged: not beside it, which
	// would be one log given twice.
	logs := []string{fx + "/chain/good_purged.jsonl", fx + "/chain/good_web.jsonl"}
	runs := map[string][]string{
		"shadow/traces": {"shadow", "--baseline", fx + "/policies/main.yaml", "--candidate", fx + "/policies/ask-on-taint.yaml", fx + "/traces/main"},
		"shadow/corpus": {"shadow", "--baseline", fx + "/corpus/policy.yaml", "--candidate", fx + "/policies/corpus-candidate.yaml", fx + "/corpus"},
		"shadow/logs":   append([]string{"shadow", "--candidate", fx + "/chain/src/candidate.yaml"}, logs...),
		"ablate/corpus": {"ablate", "--policy", fx + "/corpus/policy.yaml", "--rules", fx + "/corpus"},
		// Sends found on the web, under the default and the origin-aware
		// policy, and what one changes into the other.
		"ablate/web":        {"ablate", "--policy", fx + "/corpus/web/policy.yaml", fx + "/corpus/web"},
		"ablate/web-origin": {"ablate", "--policy", fx + "/corpus/web/policy-origin.yaml", fx + "/corpus/web"},
		"shadow/web":        {"shadow", "--baseline", fx + "/corpus/web/policy.yaml", "--candidate", fx + "/corpus/web/policy-origin.yaml", fx + "/corpus/web"},
		"ablate/web-tiers":  {"ablate", "--policy", fx + "/corpus/web/policy-tiers.yaml", fx + "/corpus/web"},
		"shadow/web-tiers":  {"shadow", "--baseline", fx + "/corpus/web/policy-origin.yaml", "--candidate", fx + "/corpus/web/policy-tiers.yaml", fx + "/corpus/web"},
		// What the provenance tiers change, turned on over the same traces.
		"shadow/tiers": {"shadow", "--baseline", fx + "/policies/tiers-off.yaml", "--candidate", fx + "/policies/tiers.yaml", fx + "/traces/tiers"},
		"ablate/logs":  append([]string{"ablate", "--labels", fx + "/chain/src/labels.jsonl"}, logs...),
		// The results the incident review pack is given: over its one log.
		"shadow/mail": {"shadow", "--candidate", fx + "/chain/src/candidate.yaml", fx + "/chain/good_mail.jsonl"},
		"ablate/mail": {"ablate", "--labels", fx + "/chain/src/labels-mail.jsonl", fx + "/chain/good_mail.jsonl"},
		// Attacks the policy let through are named, not only counted.
		"ablate/through": {"ablate", "--labels", fx + "/chain/src/labels-through.jsonl", fx + "/chain/good_mail.jsonl"},
		// A call, not "1 calls".
		"shadow/one-call": {"shadow", "--baseline", fx + "/policies/main.yaml", "--candidate", fx + "/policies/ask-on-taint.yaml", fx + "/traces/main/allow_rules_everything_echo.jsonl"},
		// Rates over nothing are not measurements.
		"ablate/unlabelled": {"ablate", fx + "/chain/good_mail.jsonl"},
	}
	for name, args := range runs {
		for _, f := range []string{"table", "json", "markdown"} {
			t.Run(name+"."+f, func(t *testing.T) {
				var out, errb bytes.Buffer
				if code := run(append(append([]string{}, args...), "--format", f), nil, &out, &errb); code != 0 {
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
	dir := t.TempDir()
	noCalls := filepath.Join(dir, "no-calls.jsonl")
	unknown := filepath.Join(dir, "labels.jsonl")
	for name, text := range map[string]string{
		noCalls: `{"start":{"session":"s1","server":"mail","principal":{"subject":"ana","scopes":["mail.read"]},"tools":["get_message"]}}` + "\n" + `{"end":{}}` + "\n",
		unknown: `{"session":"s1","call":"c2","label":"attack"}` + "\n" + `{"session":"s9","call":"c2","label":"attack"}` + "\n" + `{"session":"s9","call":"c3","label":"benign"}` + "\n",
	} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
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
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--fail-on-dead", fx + "/corpus"}, 1, "checks scopes, pattern, approval are dead: each decided no call"},
		// A check that decided calls is never dead, though its absence
		// changes none (approval here); --checks picks what the gate
		// covers.
		{[]string{"ablate", "--fail-on-dead", fx + "/chain/good_mail.jsonl"}, 1, "checks pinning, scopes, budget, path, pattern are dead"},
		{[]string{"ablate", "--fail-on-dead", "--checks", "approval,taint", fx + "/chain/good_mail.jsonl"}, 0, ""},
		{[]string{"ablate", "--fail-on-dead", "--checks", "taint,path", fx + "/chain/good_mail.jsonl"}, 1, "error: check path is dead: it decided no call"},
		// Calls that could not be decided again (purged output) leave a
		// check that did nothing neither dead nor alive: no verdict.
		{[]string{"ablate", "--fail-on-dead", fx + "/chain/good_purged.jsonl"}, 2, "--fail-on-dead cannot judge check pinning: 3 calls could not be decided again without it"},
		// A gate over a log that fails verify is refused, told to read it or not.
		{[]string{"ablate", "--allow-unverified", "--fail-on-dead", fx + "/chain/fail_forged_verdict.jsonl"}, 2, "a gate cannot stand on logs that fail verify"},
		{[]string{"shadow", "--allow-unverified", "--candidate", fx + "/chain/src/candidate.yaml", "--fail-on", "newly-allowed", "--max-changed", "9", fx + "/chain/fail_forged_verdict.jsonl"}, 2, "a gate cannot stand on logs that fail verify"},
		{[]string{"ablate", "--checks", "paht", fx + "/chain/good_mail.jsonl"}, 2, `--checks "paht" is not a check ablate switches off`},
		{[]string{"ablate", "--checks", "path", fx + "/chain/good_mail.jsonl"}, 2, "--checks names the checks --fail-on-dead covers, and needs it"},
		{[]string{"ablate", "--fail-on-dead", "--checks", "taints", fx + "/chain/good_mail.jsonl"}, 2, `--checks "taints" is not a check ablate switches off`},
		{[]string{"ablate", "--fail-on-dead", "--checks", "rule:send-mail", fx + "/chain/good_mail.jsonl"}, 2, "--checks rule:send-mail names a rule, and rules are scored with --rules (which needs --policy)"},
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--rules", "--fail-on-dead", "--checks", "taint,rule:no-such", fx + "/corpus"}, 2, "--checks rule:no-such names no rule of"},
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--min-block-rate", "0.9", "--max-benign-loss", "0.2", fx + "/corpus"}, 0, ""},
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--max-benign-loss", "0.01", fx + "/corpus"}, 1, "more than 0.01"},
		// The aim on web-found sends: no injected destination allowed,
		// at most a quarter of the legitimate sends denied.
		{[]string{"ablate", "--policy", fx + "/corpus/web/policy-origin.yaml", "--min-block-rate", "1", "--max-benign-denied", "0.25", fx + "/corpus/web"}, 1, "the policy denies"},
		{[]string{"ablate", "--policy", fx + "/corpus/web/policy-tiers.yaml", "--min-block-rate", "1", "--max-benign-denied", "0.25", fx + "/corpus/web"}, 0, ""},
		{[]string{"ablate", "--policy", fx + "/corpus/web/policy.yaml", "--max-benign-denied", "0.25", fx + "/corpus/web"}, 1, "the policy denies 1.00 of benign calls, more than 0.25"},
		{[]string{"ablate", "--policy", fx + "/policies/main.yaml", "--max-benign-denied", "0.1", fx + "/traces/main"}, 2, "--max-benign-denied has nothing to measure: no call is labelled benign"},
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--max-benign-denied", "x", fx + "/corpus"}, 2, `--max-benign-denied wants a number from 0 to 1, not "x"`},
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--min-block-rate", "2", fx + "/corpus"}, 2, `--min-block-rate wants a number from 0 to 1, not "2"`},
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--min-block-rate", "1.5", fx + "/corpus"}, 2, `--min-block-rate wants a number from 0 to 1, not "1.5"`},
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--min-block-rate", "abc", fx + "/corpus"}, 2, `--min-block-rate wants a number from 0 to 1, not "abc"`},
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--min-block-rate", "95%", fx + "/corpus"}, 2, "hint: a rate is a share of the calls: 95% is --min-block-rate 0.95"},
		{[]string{"shadow", "--candidate", fx + "/chain/src/candidate.yaml", "--format", "yaml", fx + "/chain/good_mail.jsonl"}, 2, "unknown format \"yaml\" (want table, json or markdown)\nbailiff: hint: json is for scripts"},
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--min-block-rate", "NaN", fx + "/corpus"}, 2, `--min-block-rate wants a number from 0 to 1, not "NaN"`},
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--max-benign-loss", "-0.1", fx + "/corpus"}, 2, `--max-benign-loss wants a number from 0 to 1, not "-0.1"`},
		{[]string{"ablate", "--policy", fx + "/corpus/policy.yaml", "--max-benign-loss", "", fx + "/corpus"}, 2, `--max-benign-loss wants a number from 0 to 1, not ""`},
		// A gate with nothing to measure is an error, not a pass.
		{[]string{"ablate", "--min-block-rate", "0.95", fx + "/chain/good_mail.jsonl"}, 2, "--min-block-rate has nothing to measure: no call is labelled attack (10 calls compared)"},
		{[]string{"ablate", "--policy", fx + "/policies/main.yaml", "--max-benign-loss", "0.1", fx + "/traces/main"}, 2, "--max-benign-loss has nothing to measure: no call is labelled benign"},
		{[]string{"ablate", "--policy", fx + "/policies/main.yaml", "--fail-on-dead", noCalls}, 2, "the gates have nothing to measure: the input holds no calls"},
		{[]string{"ablate", "--policy", fx + "/policies/main.yaml", "--min-block-rate", "0.5", noCalls}, 2, "the gates have nothing to measure"},
		{[]string{"shadow", "--baseline", fx + "/policies/main.yaml", "--candidate", fx + "/policies/main.yaml", "--fail-on", "newly-allowed", noCalls}, 2, "--fail-on has nothing to measure: the input holds no calls"},
		{[]string{"shadow", "--candidate", fx + "/chain/src/candidate.yaml", "--max-changed", "2", fx + "/chain/good_mail.jsonl"}, 2, "--max-changed needs --fail-on, the categories it counts\nbailiff: hint: for example: --fail-on newly-allowed,newly-denied --max-changed 3"},
		{[]string{"shadow", "--candidate", fx + "/chain/src/candidate.yaml", "--fail-on", "newly-allowed", "--max-changed", "-1", fx + "/chain/good_mail.jsonl"}, 2, "--max-changed wants a count of 0 or more, not -1"},
		{[]string{"ablate", "--labels", unknown, fx + "/chain/good_mail.jsonl"}, 2, unknown + ":2: call c2 of session s9 is not in the input"},
		// One call is one call.
		{[]string{"shadow", "--baseline", fx + "/policies/main.yaml", "--candidate", fx + "/policies/ask-on-taint.yaml", "--fail-on", "newly-denied,newly-asked,newly-allowed", fx + "/traces/main/allow_rules_everything_echo.jsonl"}, 1, "error: 1 call is newly-denied or newly-asked or newly-allowed (at most 0 allowed)\n"},
		{[]string{"ablate", "--rules", fx + "/corpus"}, 2, "--rules needs --policy"},
		{[]string{"ablate", "--labels", fx + "/chain/src/policy.yaml", fx + "/chain/good_mail.jsonl"}, 2, "policy.yaml is a policy, not a labels file"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args[:2], " ")+c.err, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(c.args, nil, &out, &errb); code != c.code || !strings.Contains(errb.String(), c.err) {
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
	if code := run([]string{"ablate", "--policy", "../../fixtures/corpus/policy.yaml", "../../fixtures/corpus"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	table := strings.SplitN(out.String(), "\n\n", 2)[0]
	if !strings.Contains(string(readme), "```\n"+table+"\n```") {
		t.Errorf("README.md does not quote the corpus ablation as it is now:\n%s", table)
	}
}

// TestReadmeWebCorpus keeps the confusion tables the README quotes for
// the web-found sends true, under both policies.
func TestReadmeWebCorpus(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, pol := range []string{"policy.yaml", "policy-origin.yaml", "policy-tiers.yaml"} {
		var out, errb bytes.Buffer
		if code := run([]string{"ablate", "--policy", "../../fixtures/corpus/web/" + pol, "../../fixtures/corpus/web"}, nil, &out, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		blocks := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n\n")
		table := blocks[len(blocks)-1]
		if !strings.Contains(string(readme), "```\n# "+pol+"\n"+table+"\n```") {
			t.Errorf("README.md does not quote the web corpus under %s as it is now:\n%s", pol, table)
		}
	}
}

// TestShadowAblateRefuseUnverified: an audit log that fails verify is no
// baseline. Every tampered fixture that verify catches is refused (exit 2)
// by shadow and by ablate, naming the log, unless --allow-unverified.
func TestShadowAblateRefuseUnverified(t *testing.T) {
	const fx = "../../fixtures"
	logs, _ := filepath.Glob(fx + "/chain/fail_*.jsonl")
	if len(logs) < 10 {
		t.Fatalf("only %d tampered logs", len(logs))
	}
	for _, log := range logs {
		if strings.Contains(log, "truncated") {
			continue // a truncated log verifies without its checkpoint
		}
		for _, args := range [][]string{
			{"shadow", "--candidate", fx + "/chain/src/candidate.yaml", log},
			{"ablate", log},
		} {
			t.Run(args[0]+" "+filepath.Base(log), func(t *testing.T) {
				var out, errb bytes.Buffer
				code := run(args, nil, &out, &errb)
				if code != 2 || !strings.Contains(errb.String(), log) || out.Len() != 0 {
					t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing, and an error naming %s", code, out.String(), errb.String(), log)
				}
			})
		}
	}
}

// TestShadowAblateUnverified: with --allow-unverified a log with a forged
// verdict is compared, and every output format says it is unverified.
func TestShadowAblateUnverified(t *testing.T) {
	const fx = "../../fixtures"
	log := fx + "/chain/fail_forged_verdict.jsonl"
	runs := map[string][]string{
		"shadow/unverified": {"shadow", "--allow-unverified", "--candidate", fx + "/chain/src/candidate.yaml", log},
		"ablate/unverified": {"ablate", "--allow-unverified", log},
	}
	for name, args := range runs {
		for f, want := range map[string]string{"table": "\nUNVERIFIED: ", "json": `"verified":false,"unverified":["` + log + ` fails verify: 1 finding`, "markdown": "> **UNVERIFIED: "} {
			t.Run(name+"."+f, func(t *testing.T) {
				var out, errb bytes.Buffer
				if code := run(append(append([]string{}, args...), "--format", f), nil, &out, &errb); code != 0 {
					t.Fatalf("exit %d: %s", code, errb.String())
				}
				if !strings.Contains("\n"+out.String(), want) {
					t.Errorf("no %q in:\n%s", want, out.String())
				}
				golden.Check(t, filepath.Join("../../golden", name+"."+f), out.Bytes())
			})
		}
	}
	// A log that verifies is verified, flag or not.
	var out, errb bytes.Buffer
	if code := run([]string{"shadow", "--allow-unverified", "--candidate", fx + "/chain/src/candidate.yaml", "--format", "json", fx + "/chain/good_mail.jsonl"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"verified":true,"inputs":[`) || strings.Contains(out.String(), "UNVERIFIED") {
		t.Errorf("a clean log reads as unverified:\n%s", out.String())
	}
}

// TestShadowAblateUnverifiedHint: the hint a refused log gets is true.
// Where it offers --allow-unverified, the flag does use the log; a log
// that fails integrity cannot be read past, so it is told so instead, and
// a torn last line is pointed at repair; one whose sessions cannot be
// read (a policy that does not load) says the flag cannot use it either.
func TestShadowAblateUnverifiedHint(t *testing.T) {
	const fx = "../../fixtures"
	logs, _ := filepath.Glob(fx + "/chain/fail_*.jsonl")
	integrity := 0
	for _, log := range logs {
		if strings.Contains(log, "truncated") {
			continue
		}
		for _, args := range [][]string{
			{"shadow", "--candidate", fx + "/chain/src/candidate.yaml", log},
			{"ablate", log},
		} {
			t.Run(args[0]+" "+filepath.Base(log), func(t *testing.T) {
				var out, errb bytes.Buffer
				if code := run(args, nil, &out, &errb); code != 2 {
					t.Fatalf("exit %d, want 2: %s", code, errb.String())
				}
				msg := errb.String()
				if strings.Contains(msg, "--allow-unverified uses the log anyway") {
					var out2, errb2 bytes.Buffer
					if code := run(append([]string{args[0], "--allow-unverified"}, args[1:]...), nil, &out2, &errb2); code == 2 {
						t.Errorf("the hint offers --allow-unverified, but with it: exit 2: %s", errb2.String())
					}
					return
				}
				if strings.Contains(msg, "--allow-unverified cannot use it either: ") {
					return
				}
				if !strings.Contains(msg, "cannot be read past the failure") {
					t.Errorf("neither a usable hint nor an integrity failure: %s", msg)
				}
				integrity++
				if strings.Contains(log, "torn") && !strings.Contains(msg, "bailiff repair "+log) {
					t.Errorf("a torn log is not pointed at repair: %s", msg)
				}
			})
		}
	}
	if integrity == 0 {
		t.Error("no fixture fails integrity")
	}
}

// TestShadowNegativeExamples: a negative --examples is refused, naming
// the flag, before anything is read.
func TestShadowNegativeExamples(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"shadow", "--examples", "-1", "--candidate", "../../fixtures/chain/src/candidate.yaml", "../../fixtures/chain/good_mail.jsonl"}, nil, &out, &errb)
	if code != 2 || out.Len() != 0 || errb.String() != "bailiff: error: --examples wants a count of 0 or more, not -1\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
