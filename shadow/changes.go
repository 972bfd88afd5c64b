package shadow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"bailiff/engine"
)

// Change is one call a candidate decides otherwise, as a review shows
// it: what the diff keeps of a Pair. The arguments are held as their
// JSON, encoded once when the call is kept, so a kept call costs its
// bytes and not a tree of maps for the collector to walk.
type Change struct {
	Category  string
	File      string
	Session   string
	Pos       int
	ID        string
	Tool      string
	Baseline  Outcome
	Candidate Outcome
	// Args are the call's arguments as compact JSON with sorted keys and
	// no HTML escaping ({} when it had none); ArgsErr says why they
	// could not be encoded, when they could not.
	Args     []byte
	ArgsErr  string
	Redacted []string
}

// Outcome is what a review shows of a decision.
type Outcome struct {
	Verdict     engine.Verdict
	Check       engine.Check
	Rule        string
	Reason      string
	Unevaluable bool
}

func outcomeOf(d engine.Decision) Outcome {
	return Outcome{Verdict: d.Verdict, Check: d.Check, Rule: d.Rule, Reason: d.Reason, Unevaluable: d.Unevaluable}
}

// changeOf keeps what a review shows of p, in category c.
func changeOf(c string, p Pair) Change {
	ch := Change{Category: c, File: p.File, Session: p.Session, Pos: p.Pos, ID: p.ID, Tool: p.Tool,
		Baseline: outcomeOf(p.Baseline), Candidate: outcomeOf(p.Candidate), Redacted: p.Redacted}
	args := p.Args
	if args == nil {
		args = map[string]any{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		ch.ArgsErr = err.Error()
	} else {
		ch.Args = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	}
	return ch
}

// categoryRank orders the changed categories as the report lists them.
func categoryRank(c string) int {
	return slices.Index(Categories(), c)
}

// changeBefore is the order a review lists changes in: by category, then
// file, position and id, whatever order parallel sessions finished in.
func changeBefore(a, b *Change) bool {
	if a.Category != b.Category {
		return categoryRank(a.Category) < categoryRank(b.Category)
	}
	if a.File != b.File {
		return a.File < b.File
	}
	if a.Pos != b.Pos {
		return a.Pos < b.Pos
	}
	return a.ID < b.ID
}

func compareChanges(a, b Change) int {
	switch {
	case changeBefore(&a, &b):
		return -1
	case changeBefore(&b, &a):
		return 1
	}
	return 0
}

// size is about what a change holds in memory, to bound what is kept
// before it is spilled.
func (c *Change) size() int {
	n := 160 + len(c.File) + len(c.Session) + len(c.ID) + len(c.Tool) + len(c.Args) + len(c.ArgsErr)
	for _, o := range []*Outcome{&c.Baseline, &c.Candidate} {
		n += len(o.Verdict) + len(o.Check) + len(o.Rule) + len(o.Reason)
	}
	for _, r := range c.Redacted {
		n += 16 + len(r)
	}
	return n
}

// errSpill wraps an error of the temporary file the changes spill to.
func errSpill(err error) error {
	return fmt.Errorf("cannot keep the changed calls in a temporary file: %w", err)
}
