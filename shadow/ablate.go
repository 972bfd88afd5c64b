package shadow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"bailiff/engine"
	"bailiff/internal/jsontext"
)

// Score is what one check (or one rule) earns over the history: the calls
// whose verdict changes when it alone is switched off and, for labelled
// calls, the attacks it stops alone and the benign calls it costs.
type Score struct {
	Name string // a check, or "rule:<id>"

	Calls      int // calls compared
	Changed    int // calls whose verdict changes without it
	Uneval     int // calls whose verdict without it cannot be recomputed
	Attacks    int // attack-labelled calls
	Benign     int // benign-labelled calls
	StopsAlone int // attacks stopped with it and let through without it
	Stopped    int // attacks stopped with and without it
	Costs      int // benign calls it stops (let through without it)
	// Decided counts the calls the baseline decided by it: its check
	// named in the decision, or for a rule, the rule.
	Decided int
}

// Dead tells whether the check did nothing over this history: it decided
// no call, and switching it off changes none.
func (s Score) Dead() bool { return s.Changed == 0 && s.Uneval == 0 && s.Decided == 0 }

// Unmeasured tells whether the check decided no call and changed none,
// yet some calls could not be decided again without it: dead or alive,
// this history cannot say.
func (s Score) Unmeasured() bool { return s.Changed == 0 && s.Decided == 0 && s.Uneval > 0 }

// NothingAlone tells whether the check decided calls, yet switching it
// off alone changes none: another check, or the same answer, would have
// decided them the same. Not dead: it worked, and earned nothing alone.
// Approval is the common case: with it off a human's answer still
// answers, unchecked, and a history of well-bound answers reads the same.
func (s Score) NothingAlone() bool { return s.Changed == 0 && s.Uneval == 0 && s.Decided > 0 }

// stopped means the call did not go through as asked: denied, or held for
// a human (no answer is a deny).
func stopped(d engine.Decision) bool { return d.Verdict != engine.Allow }

// LabelKey names one call of an audit log.
type LabelKey struct{ Session, Call string }

// Labels map calls to "attack" or "benign".
type Labels map[LabelKey]Label

// Label is one line of a labels file: the label, and where it was
// written, to name it when it labels no call of the input.
type Label struct {
	Value string // "attack" or "benign"
	File  string
	Line  int
}

// ParseLabels reads a labels file: JSON lines of
// {"session": "...", "call": "...", "label": "attack" or "benign"}.
func ParseLabels(name string, data []byte) (Labels, error) {
	out := Labels{}
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var l struct {
			Session string `json:"session"`
			Call    string `json:"call"`
			Label   string `json:"label"`
		}
		if err := jsontext.NoDuplicateKeys(line); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, i+1, err)
		}
		if err := jsontext.ExactFieldCase(line, &l); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, i+1, err)
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, i+1, jsontext.PlainJSON(err, "a label has only session, call and label"))
		}
		if l.Session == "" || l.Call == "" || (l.Label != "attack" && l.Label != "benign") {
			return nil, fmt.Errorf("%s:%d: a label needs a session, a call and the label attack or benign", name, i+1)
		}
		k := LabelKey{l.Session, l.Call}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s:%d: call %s of session %s is labelled twice", name, i+1, l.Call, l.Session)
		}
		out[k] = Label{Value: l.Label, File: name, Line: i + 1}
	}
	return out, nil
}

// Totals is how the whole baseline policy did on the labelled calls.
type Totals struct {
	Calls          int
	Attacks        int
	AttacksStopped int
	AttacksDenied  int // of those stopped, the ones denied (not asked)
	Benign         int
	BenignStopped  int
	BenignDenied   int
	// Through are the attack calls the baseline let through, by file,
	// position and id: a reviewer asks which, not only how many.
	Through []Pair
}

// BlockRate is the share of attacks the baseline stops (1 with none).
func (t Totals) BlockRate() float64 {
	if t.Attacks == 0 {
		return 1
	}
	return float64(t.AttacksStopped) / float64(t.Attacks)
}

// BenignDenial is the share of benign calls the baseline denies: the
// loss no human can answer away, where an ask can be.
func (t Totals) BenignDenial() float64 {
	if t.Benign == 0 {
		return 0
	}
	return float64(t.BenignDenied) / float64(t.Benign)
}

// BenignLoss is the share of benign calls the baseline stops.
func (t Totals) BenignLoss() float64 {
	if t.Benign == 0 {
		return 0
	}
	return float64(t.BenignStopped) / float64(t.Benign)
}

// Ablation scores every switchable check and, with rules set, every rule
// of the baseline policy: each is switched off alone and the history run
// again against the baseline. For audit logs the baseline is the recorded
// verdicts under each session's policy, and that policy minus the check is
// the candidate.
//
// Labels name calls of audit logs (which carry none) by session and call
// id; a trace's own labels come with its calls. A label that names no
// call of the inputs is an error: it most likely belongs to another log,
// and a rate computed without it would be silently wrong.
func Ablation(inputs []Input, base *engine.Policy, rules []string, labels Labels) ([]Score, Totals, error) {
	var names []string
	for _, c := range engine.Switchable() {
		names = append(names, string(c))
	}
	for _, r := range rules {
		names = append(names, "rule:"+r)
	}
	var tot Totals
	used := map[LabelKey]bool{}
	// Where each label matched: a label is for one call, and one that
	// matches two (one session id in two logs, or a call id reused) would
	// count an attack twice or label a call its author never saw.
	where := map[LabelKey][]Pair{}
	out := make([]Score, len(names))
	cands := make([]Candidate, len(names))
	// configured[i]: some session's policy gives check i work. Sessions
	// are compared in parallel.
	configured := make([]atomic.Bool, len(names))
	for i, name := range names {
		out[i].Name = name
		cands[i] = func(p *engine.Policy) (*engine.Policy, error) {
			if p.Configures(engine.Check(name)) {
				configured[i].Store(true)
			}
			return p.Without(engine.ParseOff(name))
		}
	}
	// One pass: every variant is scored from the same read of the input.
	err := compareEach(inputs, base, cands, nil, func(i int, p Pair) {
		s := &out[i]
		if p.Label == "" {
			k := LabelKey{p.Session, p.ID}
			if l, ok := labels[k]; ok {
				p.Label = l.Value
				used[k] = true
				if i == 0 {
					where[k] = append(where[k], p)
				}
			}
		}
		if i == 0 {
			tot.count(p)
		}
		s.add(p)
	})
	if err != nil {
		return nil, tot, err
	}
	if err := unused(labels, used); err != nil {
		return nil, tot, err
	}
	if err := ambiguous(labels, where); err != nil {
		return nil, tot, err
	}
	kept := out[:0]
	for i, s := range out {
		if c := engine.Check(names[i]); configured[i].Load() || (c != engine.CheckTenantBudget && c != engine.CheckRate) {
			kept = append(kept, s)
		}
	}
	out = kept
	// Sessions are compared in parallel: the order is the input's.
	sort.SliceStable(tot.Through, func(i, j int) bool { return before(tot.Through[i], tot.Through[j]) })
	return out, tot, nil
}

// count adds one call of the baseline to the totals.
func (tot *Totals) count(p Pair) {
	tot.Calls++
	switch p.Label {
	case "attack":
		tot.Attacks++
		if stopped(p.Baseline) {
			tot.AttacksStopped++
		} else {
			tot.Through = append(tot.Through, p)
		}
		if p.Baseline.Verdict == engine.Deny {
			tot.AttacksDenied++
		}
	case "benign":
		tot.Benign++
		if stopped(p.Baseline) {
			tot.BenignStopped++
		}
		if p.Baseline.Verdict == engine.Deny {
			tot.BenignDenied++
		}
	}
}

// add scores one call with the variant switched off.
func (s *Score) add(p Pair) {
	s.Calls++
	switch p.Label {
	case "attack":
		s.Attacks++
	case "benign":
		s.Benign++
	}
	if rule, ok := strings.CutPrefix(s.Name, "rule:"); (ok && p.Baseline.Rule == rule) || (!ok && string(p.Baseline.Check) == s.Name) {
		s.Decided++
	}
	if p.Candidate.Unevaluable {
		s.Uneval++
		return
	}
	with, without := stopped(p.Baseline), stopped(p.Candidate)
	if p.Candidate.Verdict != p.Baseline.Verdict {
		s.Changed++
	}
	switch {
	case p.Label == "attack" && with && !without:
		s.StopsAlone++
	case p.Label == "attack" && with && without:
		s.Stopped++
	case p.Label == "benign" && with && !without:
		s.Costs++
	}
}

// unused names the first label, in file order, that labelled no call.
func unused(labels Labels, used map[LabelKey]bool) error {
	var first *Label
	var key LabelKey
	for k, l := range labels {
		if used[k] || (first != nil && (l.File > first.File || l.File == first.File && l.Line > first.Line)) {
			continue
		}
		first, key = &l, k
	}
	if first == nil {
		return nil
	}
	return fmt.Errorf("%s:%d: call %s of session %s is not in the input", first.File, first.Line, key.Call, key.Session)
}

// ambiguous names the first label, in file order, that matched more than
// one call.
func ambiguous(labels Labels, where map[LabelKey][]Pair) error {
	var first *Label
	var key LabelKey
	for k, ps := range where {
		l := labels[k]
		if len(ps) > 1 && (first == nil || l.File < first.File || (l.File == first.File && l.Line < first.Line)) {
			first, key = &l, k
		}
	}
	if first == nil {
		return nil
	}
	ps := where[key]
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].File != ps[j].File {
			return ps[i].File < ps[j].File
		}
		return ps[i].Pos < ps[j].Pos
	})
	at := make([]string, len(ps))
	for i, p := range ps {
		at[i] = fmt.Sprintf("%s at %d", p.File, p.Pos)
	}
	return fmt.Errorf("%s:%d: call %s of session %s is %d calls of the input (%s): a label must name one call", first.File, first.Line, key.Call, key.Session, len(ps), strings.Join(at, ", "))
}
