// Package shadow compares two engine configurations over the same
// history: for every call of traces or audit logs, the baseline's verdict
// (the one recorded, or a baseline policy's) and a candidate policy's,
// judged on the history the baseline made. Ablation is the same
// comparison with the candidate "the policy minus one check" (see
// Ablate).
//
// Start with Diff and its Add method, fed by CompareSession.
package shadow

import (
	"sort"

	"bailiff/engine"
)

// The categories a call falls in.
const (
	Unchanged    = "unchanged"
	NewlyDenied  = "newly-denied"
	NewlyAsked   = "newly-asked"
	NewlyAllowed = "newly-allowed"
	Unevaluable  = "unevaluable"
)

// Categories lists the categories in report order.
func Categories() []string {
	return []string{Unchanged, NewlyDenied, NewlyAsked, NewlyAllowed, Unevaluable}
}

// Category is where a pair of decisions falls: unevaluable when the
// candidate's verdict depends on a redacted or purged input, else by the
// candidate's verdict when it differs from the baseline's.
func Category(p Pair) string {
	switch {
	case p.Candidate.Unevaluable:
		return Unevaluable
	case p.Candidate.Verdict == p.Baseline.Verdict:
		return Unchanged
	case p.Candidate.Verdict == engine.Deny:
		return NewlyDenied
	case p.Candidate.Verdict == engine.Ask:
		return NewlyAsked
	default:
		return NewlyAllowed
	}
}

// Diff accumulates a comparison: counts per category, broken down by
// tool, by the candidate's rule and by the candidate's check, and the
// first few calls of each category that changed. It keeps no call it
// does not show, so memory does not grow with history.
type Diff struct {
	// Examples is how many calls to keep per changed category; below
	// zero, every one.
	Examples int

	Calls   int
	Counts  map[string]int
	ByTool  map[string]map[string]int
	ByRule  map[string]map[string]int
	ByCheck map[string]map[string]int
	Samples map[string][]Pair
	sorted  bool // Samples are in Changes' order
}

// NewDiff starts an empty comparison keeping n examples per category.
func NewDiff(n int) *Diff {
	return &Diff{Examples: n, Counts: map[string]int{}, ByTool: map[string]map[string]int{},
		ByRule: map[string]map[string]int{}, ByCheck: map[string]map[string]int{}, Samples: map[string][]Pair{}}
}

// Add counts one call.
func (d *Diff) Add(p Pair) {
	c := Category(p)
	d.Calls++
	d.Counts[c]++
	bump(d.ByTool, p.Tool, c)
	rule := p.Candidate.Rule
	if rule == "" {
		rule = "-"
	}
	bump(d.ByRule, rule, c)
	bump(d.ByCheck, string(p.Candidate.Check), c)
	switch {
	case c == Unchanged:
	case d.Examples < 0:
		d.Samples[c] = append(d.Samples[c], p)
		d.sorted = false
	case d.Examples > 0:
		d.Samples[c] = keepFirst(d.Samples[c], p, d.Examples)
	}
}

// Changes are the calls kept of a changed category, by file, position
// and id: every one when the diff keeps all (Examples < 0), whatever
// order parallel sessions were added in.
func (d *Diff) Changes(c string) []Pair {
	if !d.sorted {
		for _, list := range d.Samples {
			sort.SliceStable(list, func(i, j int) bool { return before(list[i], list[j]) })
		}
		d.sorted = true
	}
	return d.Samples[c]
}

// keepFirst inserts p into the sorted list, keeping the n first by file,
// position and id: the examples do not depend on the order in which
// sessions verified in parallel finish.
func keepFirst(list []Pair, p Pair, n int) []Pair {
	i := sort.Search(len(list), func(i int) bool { return before(p, list[i]) })
	if i >= n {
		return list
	}
	list = append(list, Pair{})
	copy(list[i+1:], list[i:])
	list[i] = p
	if len(list) > n {
		list = list[:n]
	}
	return list
}

func before(a, b Pair) bool {
	if a.File != b.File {
		return a.File < b.File
	}
	if a.Pos != b.Pos {
		return a.Pos < b.Pos
	}
	return a.ID < b.ID
}

func bump(m map[string]map[string]int, k, c string) {
	if m[k] == nil {
		m[k] = map[string]int{}
	}
	m[k][c]++
}

// Keys returns a breakdown's keys, sorted.
func Keys(m map[string]map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Changed is how many calls the candidate decides otherwise.
func (d *Diff) Changed() int { return d.Calls - d.Counts[Unchanged] - d.Counts[Unevaluable] }
