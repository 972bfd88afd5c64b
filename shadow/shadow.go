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
// calls that changed. Kept all, the changed calls spill to a temporary
// file past a bound, so memory does not grow with history; Close
// removes it.
type Diff struct {
	// Examples is how many calls to keep per changed category; below
	// zero, every one.
	Examples int

	Calls   int
	Counts  map[string]int
	ByTool  map[string]map[string]int
	ByRule  map[string]map[string]int
	ByCheck map[string]map[string]int
	kept    map[string][]Change // the first Examples of each category
	all     spill               // every change, when Examples < 0
}

// NewDiff starts an empty comparison keeping n examples per category.
func NewDiff(n int) *Diff {
	return &Diff{Examples: n, Counts: map[string]int{}, ByTool: map[string]map[string]int{},
		ByRule: map[string]map[string]int{}, ByCheck: map[string]map[string]int{}, kept: map[string][]Change{}}
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
		d.all.add(changeOf(c, p))
	case d.Examples > 0:
		d.kept[c] = keepFirst(d.kept[c], c, p, d.Examples)
	}
}

// Err is the error that stopped the diff keeping changed calls, if any:
// a listing without them would be a lie, so it must not be written.
func (d *Diff) Err() error { return d.all.err }

// EachChange calls fn with every kept change, category by category in
// report order, each by file, position and id, whatever order parallel
// sessions were added in. It may be called more than once.
func (d *Diff) EachChange(fn func(*Change) error) error {
	if d.Examples < 0 {
		return d.all.each(fn)
	}
	for _, c := range Categories()[1:] {
		for i := range d.kept[c] {
			if err := fn(&d.kept[c][i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close removes what the diff spilled.
func (d *Diff) Close() error { return d.all.close() }

// keepFirst inserts p into the sorted list, keeping the n first by file,
// position and id: the examples do not depend on the order in which
// sessions verified in parallel finish. A call past the n first is not
// encoded at all.
func keepFirst(list []Change, c string, p Pair, n int) []Change {
	key := Change{Category: c, File: p.File, Pos: p.Pos, ID: p.ID}
	i := sort.Search(len(list), func(i int) bool { return changeBefore(&key, &list[i]) })
	if i >= n {
		return list
	}
	list = append(list, Change{})
	copy(list[i+1:], list[i:])
	list[i] = changeOf(c, p)
	if len(list) > n {
		list = list[:n]
	}
	return list
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

// before orders pairs by file, position and id.
func before(a, b Pair) bool {
	if a.File != b.File {
		return a.File < b.File
	}
	if a.Pos != b.Pos {
		return a.Pos < b.Pos
	}
	return a.ID < b.ID
}
