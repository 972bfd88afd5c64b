package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"bailiff/internal/jsontext"
)

// checkInputs parses the results given, each once, into in. A results file that is not one would be a pack with a
// hole the reviewer never sees: it is refused; one over unverified logs
// is a finding.
func checkInputs(in *PackInput) ([]PackFinding, error) {
	var unverified []PackFinding
	note := func(file, what string, u unverifiedFields) {
		if ok, notes := u.verified(); !ok {
			unverified = append(unverified, PackFinding{Rule: "unverified-baseline", Severity: SevHigh, Where: file,
				Message: fmt.Sprintf("the %s result was run with --allow-unverified over logs that fail verify (%s): its numbers stand on a history that may be forged", what, strings.Join(notes, "; "))})
		}
	}
	if in.Shadow != nil && in.shadow == nil {
		r, err := readShadow(in.Shadow)
		if err != nil {
			return nil, fmt.Errorf("--shadow %s: %v", in.ShadowFile, err)
		}
		in.shadow = r
	}
	if in.Ablate != nil && in.ablation == nil {
		r, err := readAblation(in.Ablate)
		if err != nil {
			return nil, fmt.Errorf("--ablate %s: %v", in.AblateFile, err)
		}
		in.ablation = r
	}
	if r := in.shadow; r != nil {
		note(in.ShadowFile, "shadow", r.summary.unverifiedFields)
	}
	if r := in.ablation; r != nil {
		note(in.AblateFile, "ablation", r.totals.unverifiedFields)
	}
	return unverified, nil
}

// noDuplicateKeys refuses a result with a key given twice on a line, in
// any case: Go keeps the last value, matched without regard to case,
// where another reader may take the first, and the pack would quote a
// number the file also says otherwise.
func noDuplicateKeys(data []byte) error {
	for i, line := range bytes.Split(data, []byte("\n")) {
		if err := jsontext.NoCaseDuplicateKeys(line); err != nil {
			return fmt.Errorf("line %d: %v", i+1, err)
		}
	}
	return nil
}

// shadowResult is shadow --format json output as the pack reads it, in
// the types Shadow writes it with.
type shadowResult struct {
	summary  shadowSummary
	examples []shadowExample // the first maxExamples changed calls
	listed   int             // the changed calls the result lists
}

// maxExamples bounds the changed calls the pack shows; the shadow
// output has the rest.
const maxExamples = 20

// readShadow reads a shadow result once: its summary line (the first),
// whose counts must add up to its calls and which must say whether its
// logs were verified, and its example lines. Lines of other types, or
// that are not JSON objects, are not the pack's.
func readShadow(data []byte) (*shadowResult, error) {
	if err := noDuplicateKeys(data); err != nil {
		return nil, err
	}
	var r shadowResult
	found := false
	for _, line := range bytes.Split(data, []byte("\n")) {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &head) != nil {
			continue
		}
		switch {
		case head.Type == "summary" && !found:
			r.summary = shadowSummary{} // nothing of a line that did not parse
			found = json.Unmarshal(line, &r.summary) == nil
		case head.Type == "example":
			var e shadowExample
			if json.Unmarshal(line, &e) != nil {
				continue
			}
			r.listed++
			if len(r.examples) < maxExamples {
				r.examples = append(r.examples, e)
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("no summary line: give the output of bailiff shadow --format json")
	}
	sum := 0
	for _, n := range r.summary.Counts {
		if n < 0 {
			return nil, errors.New("the summary line has a negative count")
		}
		sum += n
	}
	if sum != r.summary.Calls {
		return nil, fmt.Errorf("the summary line's counts add up to %d, not its %d calls", sum, r.summary.Calls)
	}
	if r.summary.Verified == nil {
		return nil, fmt.Errorf("its summary line does not say whether its logs were verified: give the output of this bailiff's --format json")
	}
	return &r, nil
}

// ablationResult is ablate --format json output as the pack reads it.
type ablationResult struct {
	totals  ablationTotals
	checks  []ablationLine
	through []throughLine // the attack calls let through, when named
}

// readAblation reads an ablation result once: every line must be JSON,
// with one policy line whose counts an ablation could print, and check
// lines that fit it.
func readAblation(data []byte) (*ablationResult, error) {
	if err := noDuplicateKeys(data); err != nil {
		return nil, err
	}
	var r ablationResult
	found := false
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return nil, err
		}
		switch head.Type {
		case "check":
			var l ablationLine
			if err := json.Unmarshal(line, &l); err != nil {
				return nil, err
			}
			r.checks = append(r.checks, l)
		case "through":
			var l throughLine
			if err := json.Unmarshal(line, &l); err != nil {
				return nil, err
			}
			r.through = append(r.through, l)
		case "policy":
			if found {
				return nil, errors.New("two policy lines: one ablation prints one")
			}
			if err := json.Unmarshal(line, &r.totals); err != nil {
				return nil, err
			}
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("no policy line: give the output of bailiff ablate --format json")
	}
	tot := &r.totals
	if err := tot.consistent(); err != nil {
		return nil, err
	}
	for _, l := range r.checks {
		if l.Calls != tot.Calls || l.Changed < 0 || l.Changed > l.Calls || l.Unevaluable < 0 || l.Unevaluable > l.Calls ||
			l.StopsAlone < 0 || l.StopsAlone > tot.Attacks || l.Stopped < 0 || l.Stopped > tot.Attacks || l.Costs < 0 || l.Costs > tot.Benign {
			return nil, fmt.Errorf("check %q's line does not fit the policy line's %d calls, %d attacks and %d benign calls", l.Check, tot.Calls, tot.Attacks, tot.Benign)
		}
		idle := l.Changed == 0 && l.Unevaluable == 0
		if l.Decided < 0 || l.Decided > l.Calls || l.Dead != (idle && l.Decided == 0) || l.NothingAlone != (idle && l.Decided > 0) {
			return nil, fmt.Errorf("check %q's line calls it dead or idle against its own counts", l.Check)
		}
	}
	if tot.Verified == nil {
		return nil, fmt.Errorf("its policy line does not say whether its logs were verified: give the output of this bailiff's --format json")
	}
	// An older result names no call; one that names some names them all.
	if n := tot.Attacks - tot.AttacksStopped; len(r.through) > 0 && len(r.through) != n {
		return nil, fmt.Errorf("it names %d attack calls let through, and its policy line counts %d", len(r.through), n)
	}
	return &r, nil
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
func (p *Pack) sameInputs(flag, file, head string, u unverifiedFields) error {
	if u.Inputs == nil {
		return fmt.Errorf("%s %s: its %s line does not name its inputs: give the output of this bailiff's --format json", flag, file, head)
	}
	theirs := *u.Inputs
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
