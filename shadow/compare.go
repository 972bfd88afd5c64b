package shadow

import (
	"sync"

	"bailiff/audit"
	"bailiff/engine"
)

// Pair is one call decided two ways over the same history: by the
// baseline (the verdict recorded in an audit log, or a baseline policy's
// over a trace) and by a candidate policy.
type Pair struct {
	File      string
	Session   string
	Pos       int // trace line, or record seq
	ID        string
	Tool      string
	Label     string
	Baseline  engine.Decision
	Candidate engine.Decision
	// Args are the call's arguments as its log records them (a redacted
	// value is gone, and Redacted names its path) or as its trace holds
	// them: what a reviewer of a change must see.
	Args     map[string]any
	Redacted []string
}

// CompareSession drives one session's events under a baseline and a candidate
// at once and calls fn with every call's pair of final decisions, in
// order, once the pair and every pair before it are final (a pair the
// baseline asked is final when a grant answers it, or when the session
// ends).
//
// History is the baseline's: what it allowed was forwarded, spent budget
// and produced the outputs the events hold; what it asked was answered by
// the grants that follow. The candidate is judged at each call on that
// same history (its own trusted sources decide what taints it), the way a
// policy in shadow mode would have been. A call a recorded log holds
// keeps its recorded verdict as the baseline.
func CompareSession(base, cand *engine.Policy, file string, events []audit.Event, fn func(Pair)) error {
	return compareSessions(base, []*engine.Policy{cand}, nil, file, events, func(_ int, p Pair) { fn(p) })
}

// compareSessions is CompareSession for several candidates at once, over
// one baseline: the history is applied once, and each output analyzed
// once, for all of them. fn is called with the candidate's index; each
// candidate's pairs are handed on in order, a batch of every
// candidate's at a time (sides.handOn).
// The events are not changed: an output read from a log is read when its
// step is taken, and let go after.
func compareSessions(base *engine.Policy, cands []*engine.Policy, remap Remap, file string, events []audit.Event, fn func(int, Pair)) error {
	cmp := &comparison{sd: newSides(cands, newLedgers(len(cands)), remap, file, fn)}
	d := &audit.Driver{Config: audit.Config{Policy: base, Spill: true}, Observer: cmp}
	defer func() {
		d.Close()
		cmp.sd.recycle()
	}()
	for i := range events {
		ev := events[i]
		if rs := ev.Result; rs != nil {
			step := *rs
			if step.Load != nil {
				step.Out = step.Load()
			}
			if out := step.Out; out != nil && !out.Unknown {
				// Every side takes the same text: analyze it once.
				step.Out = &audit.Output{Text: out.Text, Analyzed: &engine.Analyzed{Text: out.Text}}
			}
			ev.Result = &step
		}
		if err := d.Step(&ev); err != nil {
			return audit.SyntaxError(file, err)
		}
	}
	cmp.sd.flush()
	return nil
}

// comparison observes one session being compared: the baseline's session,
// which the driver keeps and which makes the history, and the candidates'
// sides, which follow it.
type comparison struct {
	sd *sides
}

func (cmp *comparison) Started(s *audit.Session, ev *audit.Event) error {
	cmp.sd.start(ev.At, s, ev.Start.Body)
	return nil
}

func (cmp *comparison) Called(_ *audit.Session, ev *audit.Event, _, db engine.Decision) error {
	return cmp.sd.call(ev.At, ev.Pos, ev.Call.Label, ev.Call.Call, db)
}

func (cmp *comparison) Granted(_ *audit.Session, ev *audit.Event, _ *audit.Pending, g engine.Grant, settles bool, _, db engine.Decision) error {
	if !settles {
		cmp.sd.grant(ev.At, g)
		return nil
	}
	return cmp.sd.settle(ev.At, ev.Grant.Call, g, db)
}

func (cmp *comparison) Resulted(_ *audit.Session, ev *audit.Event, _ engine.Source) error {
	cmp.sd.result(ev.At, ev.Pos, ev.Result.Body, ev.Result.Out)
	return nil
}

func (cmp *comparison) ToolsListed(_ *audit.Session, ev *audit.Event, _ bool) error {
	// An acceptance the session may not take is history too: verify
	// reports it, and no side applies it.
	cmp.sd.tools(ev.At, ev.Tools)
	return nil
}

// Ended hands the session's pairs on and closes its sides.
func (cmp *comparison) Ended(*audit.Session, *audit.Event) error {
	cmp.sd.flush()
	return nil
}

// pairsPool holds the pair slices ([]Pair) of compared sessions, for the
// sessions after: each otherwise grows its own from nothing.
var pairsPool sync.Pool

const maxPooledPairs = 1 << 14

func pooledPairs() []Pair {
	if p, ok := pairsPool.Get().(*[]Pair); ok {
		return *p
	}
	return nil
}

func recyclePairs(pairs []Pair) {
	if cap(pairs) == 0 || cap(pairs) > maxPooledPairs {
		return
	}
	clear(pairs[:cap(pairs)])
	pairs = pairs[:0]
	pairsPool.Put(&pairs)
}

// newLedgers is a ledger for each of n candidates: a candidate's own
// sessions spend and count together, apart from the baseline's.
func newLedgers(n int) []*audit.Ledger {
	ls := make([]*audit.Ledger, n)
	for i := range ls {
		ls[i] = audit.NewLedger()
	}
	return ls
}

// counts tells whether the sessions of policy p, or of any candidate
// made from it, count across sessions (tenant budgets, rates): they must
// then be compared in time order across every session, never one
// session apart from the others.
func counts(p *engine.Policy, cands []Candidate) bool {
	if p.HasLimits() {
		return true
	}
	for _, cand := range cands {
		if c, err := cand(p); err == nil && c.HasLimits() {
			return true
		}
	}
	return false
}
