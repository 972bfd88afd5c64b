package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"bailiff/engine"
	"bailiff/internal/jsontext"
)

// checkInputs parses the policy given and the results. A results file
// that is not one would be a pack with a hole the reviewer never sees:
// it is refused; one over unverified logs is a finding.
func checkInputs(in PackInput) (*engine.Policy, []PackFinding, error) {
	var unverified []PackFinding
	for _, r := range []struct {
		flag, file, what, head string
		data                   []byte
		parse                  func([]byte) error
	}{
		{"--shadow", in.ShadowFile, "shadow", "summary", in.Shadow, func(b []byte) error { _, _, err := parseShadow(b); return err }},
		{"--ablate", in.AblateFile, "ablation", "policy", in.Ablate, func(b []byte) error { _, _, err := parseAblate(b); return err }},
	} {
		if r.data == nil {
			continue
		}
		if err := noDuplicateKeys(r.data); err != nil {
			return nil, nil, fmt.Errorf("%s %s: %v", r.flag, r.file, err)
		}
		if err := r.parse(r.data); err != nil {
			return nil, nil, fmt.Errorf("%s %s: %v", r.flag, r.file, err)
		}
		ok, notes, err := resultVerified(r.data, r.head)
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: %v", r.flag, r.file, err)
		}
		if !ok {
			unverified = append(unverified, PackFinding{Rule: "unverified-baseline", Severity: SevHigh, Where: r.file,
				Message: fmt.Sprintf("the %s result was run with --allow-unverified over logs that fail verify (%s): its numbers stand on a history that may be forged", r.what, strings.Join(notes, "; "))})
		}
	}
	if in.PolicyData == nil {
		return nil, unverified, nil
	}
	given, err := engine.Load(in.PolicyName, in.PolicyData)
	return given, unverified, err
}

// noDuplicateKeys refuses a result with a key given twice on a line, in
// any case: the pack reads each line several times, into different
// structs, and would quote whichever value Go keeps (the last, matched
// without regard to case) where another reader may take the first.
func noDuplicateKeys(data []byte) error {
	for i, line := range bytes.Split(data, []byte("\n")) {
		if err := jsontext.NoCaseDuplicateKeys(line); err != nil {
			return fmt.Errorf("line %d: %v", i+1, err)
		}
	}
	return nil
}

// readResults reads the --shadow and --ablate results into the pack once;
// checkInputs has refused any that does not parse, so there is no error
// left to handle. Their fields stay nil when a result is not given.
func (p *Pack) readResults(in PackInput) {
	if in.Shadow != nil {
		p.shadowCounts, p.shadowCalls, _ = parseShadow(in.Shadow)
	}
	if in.Ablate != nil {
		p.ablLines, p.abl, _ = parseAblate(in.Ablate)
	}
}

// resultVerified reads whether a shadow or ablate result's baseline was
// verified, from its head line (type head). A result that does not say is
// refused: it comes from a bailiff that did not verify, and a pack built
// on it would vouch for numbers nobody checked.
func resultVerified(data []byte, head string) (bool, []string, error) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		var h struct {
			Type       string   `json:"type"`
			Verified   *bool    `json:"verified"`
			Unverified []string `json:"unverified"`
		}
		if json.Unmarshal(line, &h) != nil || h.Type != head {
			continue
		}
		if h.Verified == nil {
			return false, nil, fmt.Errorf("its %s line does not say whether its logs were verified: give the output of this bailiff's --format json", head)
		}
		return *h.Verified, h.Unverified, nil
	}
	return false, nil, fmt.Errorf("no %s line", head)
}

// shadowSummary reads the counts line of shadow --format json output.
func parseShadow(data []byte) (map[string]int, int, error) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		var s struct {
			Type   string         `json:"type"`
			Calls  int            `json:"calls"`
			Counts map[string]int `json:"counts"`
		}
		if json.Unmarshal(line, &s) == nil && s.Type == "summary" {
			sum := 0
			for _, n := range s.Counts {
				if n < 0 {
					return nil, 0, errors.New("the summary line has a negative count")
				}
				sum += n
			}
			if sum != s.Calls {
				return nil, 0, fmt.Errorf("the summary line's counts add up to %d, not its %d calls", sum, s.Calls)
			}
			return s.Counts, s.Calls, nil
		}
	}
	return nil, 0, fmt.Errorf("no summary line: give the output of bailiff shadow --format json")
}

// packExample is one changed call a shadow result shows.
type packExample struct {
	Category  string `json:"category"`
	Session   string `json:"session"`
	Call      string `json:"call"`
	Tool      string `json:"tool"`
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	Reason    string `json:"reason"`
}

// maxExamples bounds the changed calls the pack shows; the shadow
// output has the rest.
const maxExamples = 20

// packExamples are the example lines of a shadow result, in its order.
func packExamples(data []byte) []packExample {
	var out []packExample
	for _, line := range bytes.Split(data, []byte("\n")) {
		var e struct {
			Type string `json:"type"`
			packExample
		}
		if json.Unmarshal(line, &e) == nil && e.Type == "example" && len(out) < maxExamples {
			out = append(out, e.packExample)
		}
	}
	return out
}

func parseAblate(data []byte) ([]ablationLine, *ablationTotals, error) {
	var lines []ablationLine
	var tot *ablationTotals
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return nil, nil, err
		}
		switch head.Type {
		case "check":
			var l ablationLine
			if err := json.Unmarshal(line, &l); err != nil {
				return nil, nil, err
			}
			lines = append(lines, l)
		case "policy":
			if tot != nil {
				return nil, nil, errors.New("two policy lines: one ablation prints one")
			}
			var t ablationTotals
			if err := json.Unmarshal(line, &t); err != nil {
				return nil, nil, err
			}
			tot = &t
		}
	}
	if tot == nil {
		return nil, nil, fmt.Errorf("no policy line: give the output of bailiff ablate --format json")
	}
	if err := tot.consistent(); err != nil {
		return nil, nil, err
	}
	for _, l := range lines {
		if l.Calls != tot.Calls || l.Changed < 0 || l.Changed > l.Calls || l.Unevaluable < 0 || l.Unevaluable > l.Calls ||
			l.StopsAlone < 0 || l.StopsAlone > tot.Attacks || l.Stopped < 0 || l.Stopped > tot.Attacks || l.Costs < 0 || l.Costs > tot.Benign {
			return nil, nil, fmt.Errorf("check %q's line does not fit the policy line's %d calls, %d attacks and %d benign calls", l.Check, tot.Calls, tot.Attacks, tot.Benign)
		}
	}
	return lines, tot, nil
}

// consistent refuses totals no ablation run could print: the pack would
// quote them as measured. Rates are the counts' quotients, as ablate
// computes them.
func (t *ablationTotals) consistent() error {
	switch {
	case t.Calls < 0 || t.Attacks < 0 || t.Benign < 0 || t.AttacksStopped < 0 || t.BenignStopped < 0 || t.AttacksDenied < 0 || t.BenignDenied < 0:
		return errors.New("the policy line has a negative count")
	case t.Attacks+t.Benign > t.Calls:
		return fmt.Errorf("the policy line labels %d calls of %d", t.Attacks+t.Benign, t.Calls)
	case t.AttacksStopped > t.Attacks || t.AttacksDenied > t.AttacksStopped || t.BenignStopped > t.Benign || t.BenignDenied > t.BenignStopped:
		return errors.New("the policy line stops more calls than it counts")
	case t.Attacks > 0 && math.Abs(t.BlockRate-float64(t.AttacksStopped)/float64(t.Attacks)) > 1e-9,
		t.Benign > 0 && math.Abs(t.BenignLoss-float64(t.BenignStopped)/float64(t.Benign)) > 1e-9:
		return errors.New("the policy line's rates are not its counts' quotients")
	}
	return nil
}

// sameInputs refuses a shadow or ablation result computed over inputs
// other than the pack's logs: a trace, another log, or one of these logs
// at another length.
func (p *Pack) sameInputs(flag, file, head string, data []byte) error {
	var theirs []InputRef
	found := false
	for _, line := range bytes.Split(data, []byte("\n")) {
		var h struct {
			Type   string      `json:"type"`
			Inputs *[]InputRef `json:"inputs"`
		}
		if json.Unmarshal(line, &h) != nil || h.Type != head {
			continue
		}
		if h.Inputs == nil {
			return fmt.Errorf("%s %s: its %s line does not name its inputs: give the output of this bailiff's --format json", flag, file, head)
		}
		theirs, found = *h.Inputs, true
		break
	}
	if !found {
		return fmt.Errorf("%s %s: no %s line", flag, file, head)
	}
	key := func(r InputRef) string {
		if r.Trace {
			return "trace " + r.File
		}
		return fmt.Sprintf("%s/%d", r.First, r.Records)
	}
	count := map[string]int{}
	for _, r := range p.refs {
		count[key(r)]++
	}
	for _, r := range theirs {
		count[key(r)]--
	}
	for _, n := range count {
		if n != 0 {
			return fmt.Errorf("%s %s was computed over other inputs than the pack's logs: it covers %s; the pack reads %s", flag, file, refNames(theirs), refNames(p.refs))
		}
	}
	return nil
}

func refNames(refs []InputRef) string {
	if len(refs) == 0 {
		return "nothing"
	}
	var out []string
	for _, r := range refs {
		if r.Trace {
			out = append(out, r.File+" (a trace)")
		} else {
			out = append(out, fmt.Sprintf("%s (%d records)", r.File, r.Records))
		}
	}
	return strings.Join(out, ", ")
}

// rangeText names the range --since and --until give.
func rangeText(since, until time.Time) string {
	switch {
	case until.IsZero():
		return "--since " + since.UTC().Format(time.RFC3339)
	case since.IsZero():
		return "--until " + until.UTC().Format(time.RFC3339)
	}
	return "--since " + since.UTC().Format(time.RFC3339) + " --until " + until.UTC().Format(time.RFC3339)
}
