package engine

import "strings"

// Analyzed is the text of one tool output with what a taint index takes
// from it, worked out on the first state it is added to and reused by the
// others: shadow adds every output to two states (the baseline's and the
// candidate's), and normalizing and tokenizing the text is most of what
// adding it costs. A zero Analyzed but for Text is ready to use; it is
// not safe for concurrent use.
type Analyzed struct {
	Text   string
	done   bool
	norm   string
	emails []string // cloned: they outlive norm's other bytes in the maps
	hosts  []string // of URLs in Text, then of tokens of norm, cloned
	forms  []string // the decoded forms' normalized text the index keeps
	cut    bool     // forms were left out: see maxFormText
}

// AddAnalyzed is AddOutput for an output that may be added to other
// states too.
func (s *State) AddAnalyzed(p *Policy, src Source, a *Analyzed) {
	if p.trustedSource(src) {
		return
	}
	s.wait(waiting{src: src, a: a})
}

func (a *Analyzed) analyze() {
	if a.done {
		return
	}
	a.norm = Normalize(a.Text)
	urlHosts(a.Text, func(h string) { a.hosts = append(a.hosts, h) })
	keep := func(email, host string) {
		if email != "" {
			a.emails = append(a.emails, strings.Clone(email))
		}
		if host != "" {
			a.hosts = append(a.hosts, strings.Clone(host))
		}
	}
	tokens(a.norm, keep)
	// What add indexes beyond the tokens, so that a state fed Analyzed
	// output decides as one fed the text.
	a.cut = readForms(a.Text, a.norm, func(h string, clone bool) {
		if clone {
			h = strings.Clone(h)
		}
		a.hosts = append(a.hosts, h)
	}, keep, func(nx string) { a.forms = append(a.forms, nx) })
	a.done = true
}

// addAnalyzed is add with the text's analysis done: the same maps, text
// and filters come of it.
func (ix *taintIndex) addAnalyzed(src Source, a *Analyzed) {
	if ix.emails == nil {
		ix.emails = map[string]keyRef{}
		ix.hosts = map[string]keyRef{}
	}
	i := int32(len(ix.sources))
	ix.sources = append(ix.sources, src)
	ix.starts = append(ix.starts, ix.size)
	ix.appendPiece(a.norm)
	ix.forms = append(ix.forms, ix.size)
	for _, f := range a.forms {
		ix.appendPiece(formSep + f)
	}
	if a.cut {
		ix.cut = append(ix.cut, i)
	}
	ix.appendPiece("\x00")
	for _, e := range a.emails {
		ix.note(ix.emails, e, i, false)
	}
	for _, h := range a.hosts {
		ix.note(ix.hosts, h, i, false)
	}
}
