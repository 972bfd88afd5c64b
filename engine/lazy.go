package engine

// Untrusted output is indexed when a decision first needs the index, not
// when it arrives. Most sessions never send to an untrusted destination,
// and a trusted or approved one is passed before the index is read, so
// their output need never be normalized, tokenized or decoded at all:
// that was the largest single part of a full verify (docs/decisions.md,
// "Untrusted output is indexed when a destination needs it").
//
// The outputs wait in arrival order, with the purged ones between them,
// and are indexed in that order, so the index, the purged list and every
// decision are what adding each at once would have made them. Waiting
// text is held in memory, so once indexAfter bytes wait they are indexed
// (and may spill) whether or not a decision asked.

// indexAfter is how many bytes may wait unindexed: a quarter of what a
// spilling session keeps in memory before it spills. Each output counts
// its text and waitCost more, so that a flood of empty outputs is bounded
// too. A shared analysis counts analyzedCost times its text: waiting, it
// keeps alive what another state's analysis of it adds (the normalized
// text and its decoded forms, which the index would otherwise have taken
// and let the analysis go).
const (
	indexAfter   = 256 << 10
	waitCost     = 64
	analyzedCost = 6
)

// waiting is one output not yet in the index: its text (or its shared
// analysis), or, when purged, only its source.
type waiting struct {
	src    Source
	text   string
	a      *Analyzed
	purged bool
}

// wait queues an untrusted output for the index.
func (s *State) wait(w waiting) {
	s.waiting = append(s.waiting, w)
	s.waitingN += waitCost + len(w.text)
	if w.a != nil {
		s.waitingN += analyzedCost * len(w.a.Text)
	}
	if s.waitingN >= s.indexAfter {
		s.index()
	}
}

// index adds every waiting output to the taint index, in the order they
// came, and returns the index, ready to search.
func (s *State) index() *taintIndex {
	for i := range s.waiting {
		s.indexOne(&s.waiting[i])
		s.waiting[i] = waiting{} // its text is the index's now
	}
	s.waiting, s.waitingN = s.waiting[:0], 0
	return &s.taint
}

func (s *State) indexOne(w *waiting) {
	if w.purged {
		s.purged = append(s.purged, w.src)
		return
	}
	defer func() {
		// Output the index failed on is unknown output: any long enough
		// destination could have been in it, which is never an allow.
		if r := recover(); r != nil {
			s.purged = append(s.purged, w.src)
		}
	}()
	if w.a != nil {
		w.a.analyze()
		s.taint.addAnalyzed(w.src, w.a)
		return
	}
	s.taint.add(w.src, w.text)
}

// unknownOutputs is the untrusted output whose text is not known: purged,
// or output the index failed on.
func (s *State) unknownOutputs() []Source {
	s.index()
	return s.purged
}
