package engine

import (
	"fmt"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// Origin-aware taint. An output fetched from a URL has that URL's
// registrable domain as its origin; a destination is self-published when
// the outputs that taint it all come from its own registrable domain,
// such as the page at flysanjose.com naming
// "https://www.flysanjose.com/report-lost". Such a destination gets the
// contract's on_self_published verdict instead of on_taint's.

func compileOrigin(c *contract, name string, cs *Contract) *compileErr {
	if cs.Fetches != "" {
		pth, err := ParsePath(cs.Fetches)
		if err != nil {
			return fail(err.Error(), "tools", name, "fetches")
		}
		c.fetches = &pth
	}
	c.onSelf = c.onTaint
	switch cs.OnSelfPublished {
	case "":
	case "deny":
		c.onSelf = Deny
	case "ask":
		c.onSelf = Ask
	default:
		return fail(fmt.Sprintf("tool %q: on_self_published must be deny or ask, not %q", name, cs.OnSelfPublished), "tools", name, "on_self_published")
	}
	if c.onSelf == Deny && c.onTaint == Ask {
		// A site's own address denied while one a third party planted is
		// asked would rank the safer case as the worse one.
		return fail(fmt.Sprintf("tool %q: on_self_published: deny is stricter than on_taint: ask, which would ask for a destination a third party planted and deny the one its own site published", name), "tools", name, "on_self_published")
	}
	return nil
}

// OriginOf is the origin of the output call c brings back: the
// registrable domain of the URL its contract's fetches argument holds,
// read as the client connects to it, or "" when that is not known (no
// fetches, the argument redacted or missing, not one unambiguous web URL,
// an IP address).
func (p *Policy) OriginOf(server string, c *Call) string {
	if c == nil {
		return ""
	}
	if c.Server != "" {
		server = c.Server
	}
	ct := p.contractFor(server, c.Tool)
	if ct.fetches == nil {
		return ""
	}
	v, present, unk := valueAt(c, *ct.fetches)
	raw, ok := v.(string)
	if !present || unk || !ok || carriesURL(raw) {
		// A URL carrying another may be a redirect a fetch follows: the
		// page it returns is not known to be the first site's.
		return ""
	}
	t := targetOf(raw, Normalize(raw))
	if !t.ok || !t.url {
		return ""
	}
	return registrable(t.host)
}

// registrable is the registrable domain (eTLD+1, private suffixes such as
// github.io included) of canonical host h, or "" for an IP address or a
// name that has none (a public suffix, a single label).
func registrable(h string) string {
	h = strings.TrimSuffix(h, ".") // DNS reads "a.com." as "a.com"
	if h == "" || strings.HasPrefix(h, "[") || ipv4(h) || strings.Contains(h, "..") {
		return ""
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(h)
	if err != nil {
		return ""
	}
	return d
}

// selfPublished reports an output of D that holds destination d (t read
// from it) when d is self-published in state s, D being d's registrable
// domain:
//   - d is one unambiguous URL or address, and every address and host it
//     holds that has a registrable domain has the same one, D;
//   - some output of origin D holds d, one of its addresses or hosts;
//   - no output of another origin, or of none known, holds d, one of its
//     addresses, or a host it holds outside D, and none was purged.
//
// An output elsewhere that holds only a host of D (a search result
// listing D's home page) is no reason to deny: it can only send the agent
// to D, whose own page then names the destination.
func selfPublished(s *State, t *target, d string) (Source, bool) {
	D := ""
	if t.ok && (t.url || t.email != "") {
		D = registrable(t.host)
	}
	if D == "" {
		return Source{}, false
	}
	for _, src := range s.purged {
		if src.Origin != D {
			return Source{}, false
		}
	}
	// D's own output must hold the whole value, bar the scheme: a page
	// that names only D's host, beside a path or address someone else
	// supplied, publishes nothing.
	core := d
	if t.url {
		i := strings.Index(d, "://")
		if i < 0 {
			return Source{}, false
		}
		core = d[i+3:]
	} else if t.email != "" {
		core = t.email
	}
	var by Source
	if runeCount(core) < minTaintLen || !heldBy(&s.taint, core, D, &by) {
		return Source{}, false
	}
	v := originVote{ix: &s.taint, D: D}
	v.text(d, true)
	v.text(core, true)
	if t.url {
		// Another output naming the path is another source of it.
		if path := urlPath(core); runeCount(path) >= minTaintLen {
			v.text(path, true)
		}
	}
	foreign := func(e, h string) {
		if e != "" && registrable(emailDomain(e)) != D {
			v.bad = true
		}
		if r := registrable(h); r != "" && r != D {
			v.bad = true
		}
	}
	// Decoded, as the server reads its query and path.
	for x, i := d, 0; i < 4 && strings.Contains(x, "%"); i++ {
		dec, ok := percentDecode(x)
		if !ok {
			return Source{}, false
		}
		x = Normalize(dec)
		tokens(x, foreign)
	}
	tokens(d, func(e, h string) {
		foreign(e, h)
		if e != "" && runeCount(e) >= minTaintLen {
			v.key(v.ix.emails, e, true)
			v.text(e, true)
		}
		if h != "" && runeCount(h) >= minTaintLen {
			own := registrable(h) == D
			v.key(v.ix.hosts, h, !own)
			v.text(h, !own)
		}
	})
	for _, h := range []string{t.web.host, t.webN.host} {
		if h != "" && runeCount(h) >= minTaintLen {
			v.key(v.ix.hosts, h, false)
		}
	}
	return by, v.published && !v.bad && s.taint.err == nil
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

// originVote gathers what the outputs holding a destination say of its
// origin: published, one of D's own holds it; bad, another's does where
// that counts.
type originVote struct {
	ix        *taintIndex
	D         string
	published bool
	bad       bool
}

func (v *originVote) saw(src Source, strict bool) bool {
	switch {
	case src.Origin == v.D:
		v.published = true
	case strict:
		v.bad = true
		return false
	}
	return true
}

// text votes every output whose text holds str.
func (v *originVote) text(str string, strict bool) {
	if !v.bad && runeCount(str) >= minTaintLen {
		v.ix.findEach(str, func(src Source) bool { return v.saw(src, strict) })
	}
}

// key votes the outputs the index holds key for: one origin, or mixed.
func (v *originVote) key(m map[string]keyRef, key string, strict bool) {
	r, ok := m[key]
	if !ok || v.bad {
		return
	}
	if !r.mixed {
		v.saw(v.ix.sources[r.src], strict)
		return
	}
	if strict {
		v.bad = true
		return
	}
	// Held by D's output and others, or by others only: the text says
	// whether D's own is among them.
	if !v.published {
		v.ix.findEach(key, func(src Source) bool { return v.saw(src, false) && !v.published })
	}
}

// selfDecision is the decision for tainted destination d if it is
// self-published, nil if not.
func selfDecision(ct *contract, s *State, d *dest) *Decision {
	t := targetOf(d.raw, d.norm)
	if t.url && (carriesURL(d.raw) || carriesURL(d.norm)) {
		return nil
	}
	by, ok := selfPublished(s, &t, d.norm)
	if !ok {
		return nil
	}
	return &Decision{Verdict: ct.onSelf, Check: CheckTaint, TaintedBy: &by, Destination: d.norm,
		Reason: fmt.Sprintf("destination %s %q comes from %s: published by %s itself", d.path, d.raw, by, by.Origin)}
}

// carriesURL tells whether URL s holds another URL after its authority,
// escaped or not: a redirect target ("?to=https://evil.example/",
// "?next=%2F%2Fevil.example"), to which the site would pass the data on,
// so that publishing it says nothing of where the data ends up.
func carriesURL(s string) bool {
	i := strings.Index(s, "://")
	if i < 0 {
		return false
	}
	if strings.IndexByte(s, ':') != i {
		// "https:/host/?to=https://evil" is read by clients as a URL of
		// host; the first "://" is the one it carries.
		return true
	}
	rest := s[i+3:]
	for range 4 {
		// A scheme-relative target ("http:evil.example"), or one a
		// client reads past a tab or newline ("/\t/evil.example").
		low := strings.ToLower(rest)
		for _, sch := range []string{"http:", "https:", "ws:", "wss:", "ftp:"} {
			if strings.Contains(low, sch) {
				return true
			}
		}
		if strings.ContainsAny(rest, "\t\n\r") {
			return true
		}
		for _, sep := range []string{"//", `\\`, `/\`, `\/`} {
			if strings.Contains(rest, sep) {
				return true
			}
		}
		if !strings.Contains(rest, "%") {
			return false
		}
		d, ok := percentDecode(rest)
		if !ok {
			return true // an escape no client reads alike
		}
		rest = d
	}
	return true
}

// Source is where a piece of tool output came from: its position in the
// session (trace line or record seq, as the caller numbers it), the server
// and the tool. Taint decisions name the Source that tainted them.
type Source struct {
	Pos    int    `json:"pos"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Origin is the registrable domain of the URL the output was fetched
	// from (Policy.OriginOf), "" when it is not known: search results,
	// mail, documents, and any tool whose contract declares no fetches.
	Origin string `json:"origin,omitempty"`
}

func (s Source) String() string {
	if s.Origin != "" {
		return fmt.Sprintf("output of %s from %s (event %d)", s.Tool, s.Origin, s.Pos)
	}
	return fmt.Sprintf("output of %s (event %d)", s.Tool, s.Pos)
}
