package engine

import (
	"fmt"
	"sort"
	"strings"
)

// Provenance tiers. Every output that is not a trusted source taints, but
// where it came from decides how hard a destination it holds is stopped.
// From strictest to weakest:
//   - third-party, or of no known origin: on_taint;
//   - first-party, a tool first_party names (the user's own records,
//     whose free-text fields a stranger may still have written):
//     on_first_party;
//   - self-published, a page of the destination's own registrable domain
//     naming it: on_self_published.
//
// The strictest tier of any output holding a piece of the destination
// (the whole value, its address, host, path, or a decoded form of them)
// decides. A listing (lists: true) only points the agent to a site: its
// output is set aside when another output holds the whole destination,
// and counts at its own tier when none does.

// compileSources reads a list of {server, tool} globs: trusted_sources or
// first_party.
func compileSources(list []SourceSpec, key string) ([]SourceSpec, *compileErr) {
	what := "trusted source"
	if key == "first_party" {
		what = "first-party source"
	}
	var out []SourceSpec
	for i, s := range list {
		if s.Tool == "" {
			return nil, fail(what+" needs a tool (a glob; \"*\" for every tool)", key, i)
		}
		if err := checkGlob(s.Tool); err != nil {
			return nil, fail(err.Error(), key, i, "tool")
		}
		if s.Server == "" {
			s.Server = "*"
		}
		if err := checkGlob(s.Server); err != nil {
			return nil, fail(err.Error(), key, i, "server")
		}
		out = append(out, s)
	}
	return out, nil
}

func matchSources(list []SourceSpec, src Source) bool {
	for _, t := range list {
		if matchGlob(t.Server, src.Server) && matchGlob(t.Tool, src.Tool) {
			return true
		}
	}
	return false
}

func (p *Policy) trustedSource(src Source) bool { return matchSources(p.sources, src) }

func (p *Policy) firstParty(src Source) bool { return matchSources(p.first, src) }

func (p *Policy) listing(src Source) bool { return p.contractFor(src.ToolRef).lists }

// tierDecision is the decision for tainted destination d when no
// third-party output, nor any of unknown origin, holds a piece of it:
// on_first_party's when first-party output does, on_self_published's when
// its own site alone published it. It is nil when on_taint decides.
func tierDecision(p *Policy, ct *contract, s *State, d *dest) tierOutcome {
	if ct.onSelf == ct.onTaint && ct.onFirst == ct.onTaint {
		return tierOutcome{}
	}
	t := targetOf(d.raw, d.norm)
	D := ""
	if t.ok && (t.url || t.email != "") {
		D = registrable(t.host)
	}
	v := tierVote{p: p, ix: s.index(), D: D, skipLists: true}
	core := v.run(s, &t, d.norm)
	whole := d.norm // with its scheme: "http://" does not hold "https://"
	if !t.url && t.email != "" {
		whole = t.email
	}
	if v.listed && !v.bad && !v.heldOutsideLists(whole) {
		// Listings point, they do not publish: set aside only when
		// another output holds the whole destination.
		v = tierVote{p: p, ix: s.index(), D: D}
		v.run(s, &t, d.norm)
	}
	if v.bad || s.taint.err != nil {
		return v.badOutcome(d.norm)
	}
	if v.hasFirst {
		by := v.first
		reason := fmt.Sprintf("destination %s %q comes from first-party %s, and from no third-party output", d.path, d.raw, by)
		if v.skipLists && v.listed {
			reason += " but a listing, which only points there"
		}
		return tierOutcome{d: &Decision{Verdict: ct.onFirst, Check: CheckTaint, TaintedBy: &by, Destination: d.norm, Reason: reason}}
	}
	if D == "" || !v.published || v.foreign || t.url && (carriesURL(d.raw) || carriesURL(d.norm)) {
		return tierOutcome{}
	}
	// D's own output must hold the whole value, bar the scheme: a page
	// that names only D's host, beside a path or address someone else
	// supplied, publishes nothing.
	var by Source
	if runeCount(core) < minTaintLen || !heldBy(s.index(), core, D, &by) {
		return tierOutcome{}
	}
	return tierOutcome{d: &Decision{Verdict: ct.onSelf, Check: CheckTaint, TaintedBy: &by, Destination: d.norm,
		Reason: fmt.Sprintf("destination %s %q comes from %s: published by %s itself", d.path, d.raw, by, by.Origin)}}
}

// tierOutcome is what the tiers make of a tainted destination: d, a
// weaker tier's decision; or by, the stranger's output that keeps it at
// on_taint, and why (nil when on_taint decides for no output in
// particular).
type tierOutcome struct {
	d   *Decision
	by  *Source
	why string
}

// badOutcome names the output that made the vote bad, and what it held.
func (v *tierVote) badOutcome(d string) tierOutcome {
	if !v.hasBad {
		return tierOutcome{}
	}
	by := v.badBy
	switch v.badPiece {
	case "":
		return tierOutcome{by: &by, why: "may have appeared"}
	case d:
		return tierOutcome{by: &by, why: "appeared"}
	}
	return tierOutcome{by: &by, why: fmt.Sprintf("holds %q, which appeared", v.badPiece)}
}

// tierVote gathers what the outputs holding a destination say of its
// tier.
type tierVote struct {
	p         *Policy
	ix        *taintIndex
	D         string // the destination's registrable domain, "" for none
	skipLists bool   // set listings aside

	first     Source // the earliest first-party output holding a piece
	hasFirst  bool
	published bool // an output of D holds a piece
	listed    bool // a listing holds a piece, set aside
	bad       bool // a third-party output, or one of no known origin, holds a piece that counts
	hasBad    bool // badBy is known: the first such output, holding badPiece
	badBy     Source
	badPiece  string
	piece     string // the piece being looked up
	foreign   bool   // the destination holds an address or host outside D
}

// saw votes output src holding a piece; strict says a stranger's holding
// it counts (a stranger naming D's own host only points to D).
func (v *tierVote) saw(src Source, strict bool) bool {
	switch {
	case v.skipLists && v.p.listing(src):
		v.listed = true
	case v.p.firstParty(src):
		if !v.hasFirst || src.Pos < v.first.Pos {
			v.first, v.hasFirst = src, true
		}
	case v.D != "" && src.Origin == v.D:
		v.published = true
	case strict:
		v.bad, v.hasBad, v.badBy, v.badPiece = true, true, src, v.piece
		return false
	}
	return true
}

// text votes every output whose text holds str.
func (v *tierVote) text(str string, strict bool) {
	if !v.bad && runeCount(str) >= minTaintLen {
		v.piece = str
		v.ix.findEach(str, func(src Source) bool { return v.saw(src, strict) })
	}
}

// key votes every kind of output the index holds key for.
func (v *tierVote) key(m map[string]keyRef, key string, strict bool) {
	r, ok := m[key]
	if !ok || v.bad {
		return
	}
	v.piece = key
	if !v.ix.holders(r, func(src Source) bool { return v.saw(src, strict) }) {
		v.bad = true // held by more kinds of output than the index keeps
	}
}

// run votes every output holding a piece of destination d (t read from
// it), as judge and held look them up, and the purged ones, which may
// have held anything. It returns d's core: d without its scheme, or its
// one address.
func (v *tierVote) run(s *State, t *target, d string) string {
	for _, src := range s.unknownOutputs() {
		v.saw(src, true) // piece "": it may have held anything
	}
	for _, i := range v.ix.cut {
		v.saw(v.ix.sources[i], true) // its decoded text is not all known
	}
	core := d
	if t.url {
		if i := strings.Index(d, "://"); i >= 0 {
			core = d[i+3:]
		} else {
			v.foreign = true
		}
	} else if t.email != "" {
		core = t.email
	}
	v.text(d, true)
	v.text(core, true)
	if t.url {
		// Another output naming the path is another source of it.
		v.text(urlPath(core), true)
	}
	piece := func(e, h string) {
		if e != "" && registrable(emailDomain(e)) != v.D {
			v.foreign = true
		}
		if r := registrable(h); r != "" && r != v.D {
			v.foreign = true
		}
		if e != "" && runeCount(e) >= minTaintLen {
			v.key(v.ix.emails, e, true)
			v.text(e, true)
		}
		if h != "" && runeCount(h) >= minTaintLen {
			own := v.D != "" && registrable(h) == v.D
			v.key(v.ix.hosts, h, !own)
			v.text(h, !own)
		}
	}
	tokens(d, piece)
	for i, e := range t.emails {
		piece(e, t.hosts[i])
	}
	// Decoded, as the server reads its query and path, and as a mail
	// client reads an address.
	decodedForms(d, func(x string) bool {
		// The whole value and its path, as the server decodes them, are
		// pieces too: "/st%61rt" is "/start" to it.
		v.text(x, true)
		if i := strings.Index(x, "://"); t.url && i >= 0 {
			v.text(urlPath(x[i+3:]), true)
		}
		tokens(x, piece)
		return !v.bad
	})
	for x, i := d, 0; i < 4 && strings.Contains(x, "%"); i++ {
		dec, ok := percentDecode(x)
		if !ok {
			v.foreign = true // an escape no client reads alike
			break
		}
		x = Normalize(dec)
	}
	for _, h := range []string{t.web.host, t.webN.host, unmapped(t.web.host)} {
		if h != "" && runeCount(h) >= minTaintLen {
			v.key(v.ix.hosts, h, !(v.D != "" && registrable(h) == v.D))
		}
	}
	return core
}

// heldOutsideLists tells whether an output that is no listing holds
// whole as a whole, in its own text (not a decoded form, where decoding
// can make a boundary: "/start+evil" reads "/start evil"), and not inside
// a longer address, host or URL ("…/start-over" does not hold "…/start").
func (v *tierVote) heldOutsideLists(whole string) bool {
	if runeCount(whole) < minTaintLen {
		return false
	}
	var at []int
	v.ix.findAt(whole, func(pos int, src Source) bool {
		if !v.p.listing(src) && v.ix.inOwnText(pos, len(whole)) {
			at = append(at, pos)
		}
		return len(at) < 64
	})
	for _, p := range at {
		if bounds(v.ix.byteAt(p-1)) && v.ix.endsAt(p+len(whole)) {
			return true
		}
	}
	return false
}

// inOwnText tells whether the n bytes at pos lie in an output's own text,
// before its decoded forms.
func (ix *taintIndex) inOwnText(pos, n int) bool {
	i := sort.SearchInts(ix.starts, pos+1) - 1
	return i >= 0 && i < len(ix.forms) && pos+n <= ix.forms[i]
}

// bounds tells whether byte c, next to a match, ends the token it is in:
// white space, the text's edge, or a bracket or quote that sets a URL or
// address off in prose. Anything else, other characters' bytes included,
// may continue a longer address, host or URL.
func bounds(c byte) bool {
	return strings.IndexByte(" \t\n\r\x00([<\"'", c) >= 0
}

// endsAt tells whether a match ending before position p ends a token: the
// next byte bounds it, or a run of up to three bytes of punctuation that
// ends a sentence or a bracket (". ", "), ") comes before a bound.
func (ix *taintIndex) endsAt(p int) bool {
	for k := range 4 {
		c := ix.byteAt(p + k)
		if bounds(c) && strings.IndexByte("([<\"'", c) < 0 {
			return true
		}
		if k == 3 || strings.IndexByte(".,;:!?)]>\"'", c) < 0 {
			return false
		}
	}
	return false
}

// byteAt is the text's byte at pos: 0 outside the text, 0xff where the
// store cannot give it back.
func (ix *taintIndex) byteAt(pos int) byte {
	if pos < 0 || pos >= ix.size {
		return 0
	}
	t := ix.text(pos, pos+1)
	if len(t) == 0 {
		return 0xff
	}
	return t[0]
}

// heldBy tells whether an output of origin D holds str, and which.
func heldBy(ix *taintIndex, str, D string, by *Source) bool {
	found := false
	ix.findEach(str, func(src Source) bool {
		if src.Origin == D {
			*by, found = src, true
			return false
		}
		return true
	})
	return found
}

// urlPath is the path of a URL without its scheme ("host/a/b?q" gives
// "/a/b"), "" for none or the root.
func urlPath(core string) string {
	i := strings.IndexAny(core, "/\\")
	if i < 0 {
		return ""
	}
	p := core[i:]
	if j := strings.IndexAny(p, "?#"); j >= 0 {
		p = p[:j]
	}
	if p == "/" {
		return ""
	}
	return p
}
